// A stand-in for PgBouncer in transaction mode, small enough to trust: each client connection gets
// two server connections, and the client's transactions (each batch of messages up to a Sync or a
// simple Query) go to them in turn. So two statements on one client reach two server processes,
// as they may through a real transaction pooler. Only for loopback tests with trust authentication.
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

export interface TransactionPooler {
  readonly port: number;
  close(): Promise<void>;
}

export async function startTransactionPooler(serverPort: number): Promise<TransactionPooler> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): Socket => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    return socket;
  };
  const server: Server = createServer((client) => void pool(track(client), () => track(connect(serverPort, '127.0.0.1'))));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

async function pool(client: Socket, open: () => Socket): Promise<void> {
  const startup = await readStartup(client);
  const servers = [open(), open()];
  for (const s of servers) {
    s.on('close', () => client.destroy());
    s.write(startup);
  }
  client.on('close', () => {
    for (const s of servers) s.destroy();
  });
  let turn = 0;
  let pending = Buffer.alloc(0);
  let ready = false;
  const route = (): void => {
    let end = 0;
    for (let at = 0; ready && at + 5 <= pending.length; ) {
      const size = 1 + pending.readInt32BE(at + 1);
      if (at + size > pending.length) break;
      const type = String.fromCharCode(pending[at]!);
      at += size;
      if (type === 'S' || type === 'Q' || type === 'X') {
        servers[turn++ % 2]!.write(pending.subarray(end, at));
        end = at;
      }
    }
    pending = pending.subarray(end);
  };
  client.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    route();
  });
  // The first server's handshake answers the client; the second's is read up to its ReadyForQuery and dropped.
  servers[0]!.pipe(client);
  await untilReady(servers[1]!);
  servers[1]!.pipe(client);
  ready = true;
  route();
}

/** The StartupMessage (length-prefixed, no type byte); an SSLRequest first is answered "no". */
async function readStartup(client: Socket): Promise<Buffer> {
  let buffer = Buffer.alloc(0);
  for (;;) {
    const [chunk] = (await once(client, 'data')) as [Buffer];
    buffer = Buffer.concat([buffer, chunk]);
    if (buffer.length < 8 || buffer.length < buffer.readInt32BE(0)) continue;
    if (buffer.readInt32BE(4) !== 80877103) return buffer;
    client.write('N');
    buffer = buffer.subarray(8);
  }
}

async function untilReady(server: Socket): Promise<void> {
  let buffer = Buffer.alloc(0);
  for (;;) {
    const [chunk] = (await once(server, 'data')) as [Buffer];
    buffer = Buffer.concat([buffer, chunk]);
    for (let at = 0; at + 5 <= buffer.length; at += 1 + buffer.readInt32BE(at + 1)) {
      if (buffer[at] === 0x5a /* Z */) return;
    }
  }
}
