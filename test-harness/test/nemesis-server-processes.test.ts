import { describe, expect, it } from 'vitest';
import { ServerProcesses } from '../src/nemesis/targets/server-processes.js';
import { spawnServer } from '../src/servers/process.js';

describe("a nemesis target's server processes", () => {
  it('a start-up wait fails at once when a server exits, naming it and its last lines', async () => {
    const servers = new ServerProcesses();
    servers.add(spawnServer('quits', '/bin/sh', ['-c', 'echo "bad config line 3"; exit 3']));
    const started = performance.now();
    const failure = await servers.waitUntil('the server to answer', async () => false, 60_000).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/the server to answer: quits exited/);
    expect((failure as Error).message).toContain('bad config line 3');
    // Not at the 60 s bound: a server that died is not waited for.
    expect(performance.now() - started).toBeLessThan(10_000);
    await servers.stopAll();
  });

  it('a start-up wait that runs out says what the target saw, and a replaced server is the one waited on', async () => {
    const servers = new ServerProcesses();
    servers.add(spawnServer('first', '/bin/sh', ['-c', 'exec sleep 30']));
    // A crash and a relaunch in its place: the killed process no longer counts as exited.
    await servers.replace(0, () => spawnServer('second', '/bin/sh', ['-c', 'exec sleep 30']), 'kill');
    const failure = await servers
      .waitUntil(
        'the server to answer',
        async () => false,
        300,
        () => 'srvr: no answer',
      )
      .catch((error: Error) => error);
    expect((failure as Error).message).toMatch(/the server to answer: still not true after 300 ms \(srvr: no answer\)/);
    expect((failure as Error).message).toContain('--- second');
    await expect(servers.waitUntil('ready at once', async () => true, 300)).resolves.toBeUndefined();
    await servers.stopAll('kill');
  });
});
