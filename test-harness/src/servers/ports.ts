import { createServer } from 'node:net';

/**
 * n distinct free loopback TCP ports. All listeners stay open until every port is chosen so the
 * same port is not handed out twice; another process can still grab one before the server binds.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import('node:net').Server>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === 'string') throw new Error('unexpected listener address');
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * Free ports are only free until someone binds them (parallel test files pick ports too). Runs
 * `start` again with new ports when it failed because a port was taken.
 */
export async function retryOnPortClash<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (err) {
      const clash = /address already in use|EADDRINUSE/i.test(err instanceof Error ? err.message : String(err));
      if (!clash || i >= attempts) throw err;
    }
  }
}
