import { connect } from 'node:net';

/** What a ZooKeeper member says of itself through the `srvr` four-letter word. */
export type ZookeeperMode = 'standalone' | 'leader' | 'follower' | 'observer' | 'not serving';

/**
 * Sends a four-letter word and reads the reply until the server closes the connection (it always
 * does after a 4lw). The harness whitelists them in zoo.cfg; no client library is needed.
 */
export function fourLetterWord(port: number, word: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (err?: Error): void => {
      socket.destroy();
      if (err) reject(err);
      else resolve(reply);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`no "${word}" reply from 127.0.0.1:${port} within ${timeoutMs} ms`)));
    socket.on('error', finish);
    socket.on('connect', () => socket.write(word));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
    });
    socket.on('end', () => finish());
  });
}

/** The member's mode; 'not serving' while it has no quorum (an ensemble electing, a minority). */
export async function zookeeperMode(port: number): Promise<ZookeeperMode> {
  const reply = await fourLetterWord(port, 'srvr');
  const mode = /^Mode: (\w+)/m.exec(reply)?.[1];
  if (mode === 'standalone' || mode === 'leader' || mode === 'follower' || mode === 'observer') return mode;
  return 'not serving';
}
