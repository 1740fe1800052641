import type { Socket } from 'node:net';
import type { ChannelCredentials } from '@grpc/grpc-js';

interface SecureConnector {
  connect(socket: Socket): Promise<unknown>;
}

/**
 * The channel's credentials, noting every TCP socket the channel connects. grpc-js closes a
 * connection that never finished its HTTP/2 handshake (a hung server) gracefully, which waits for
 * the server forever: close() destroys what is left. It hooks grpc-js's internal
 * `_createSecureConnector` (1.x); should that ever change, sockets are simply not noted and close()
 * is only as prompt as grpc-js.
 */
export function noteSockets(base: ChannelCredentials, sockets: Set<Socket>): ChannelCredentials {
  return new Proxy(base, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (property !== '_createSecureConnector') return value.bind(target);
      return (...args: unknown[]) => {
        const connector = value.apply(target, args) as SecureConnector;
        const connect = connector.connect.bind(connector);
        connector.connect = (socket: Socket) => {
          sockets.add(socket);
          socket.once('close', () => sockets.delete(socket));
          return connect(socket);
        };
        return connector;
      };
    },
  });
}
