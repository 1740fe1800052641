import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisServerBinary } from '@holdfast/test-harness/servers';
import { Redis } from 'ioredis';

/** One redis-server child (no persistence) that a test can pause, resume, kill and restart on the same port. */
export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  /** SIGSTOP: the server keeps its sockets open and answers nothing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGKILL, then a fresh empty server on the same port, ready to answer. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** `extraArgs` override the defaults (e.g. `--appendonly yes`); data files go to a temporary directory. */
export async function startRedisProcess(extraArgs: readonly string[] = []): Promise<RedisProcess> {
  const bin = await redisServerBinary();
  if (!bin) throw new Error('redis-server not found on PATH');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'holdfast-redis-test-'));
  const args = ['--dir', dir, ...extraArgs];
  let child = await launch(bin, port, args);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    restart: async () => {
      await killed(child);
      child = await launch(bin, port, args);
    },
    stop: async () => {
      await killed(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `command` on a connection of its own to `node`, closed afterwards. */
export async function onNode<T>(node: RedisProcess, command: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(node.url, { lazyConnect: true, commandTimeout: 2000 });
  try {
    await client.connect();
    return await command(client);
  } finally {
    client.disconnect();
  }
}

async function launch(bin: string, port: number, extraArgs: readonly string[]): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', '', ...extraArgs];
  const child = spawn(bin, args, { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${child.exitCode}`);
    if (await answersPing(port)) return child;
    if (Date.now() > deadline) {
      await killed(child);
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function answersPing(port: number): Promise<boolean> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    retryStrategy: () => null,
    connectTimeout: 500,
    commandTimeout: 500,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** SIGKILL works on a stopped process too; resolves once it is gone. */
async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}
