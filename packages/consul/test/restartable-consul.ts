import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { consulBinary, freePorts } from '@holdfast/test-harness/servers';

/**
 * A `consul agent -dev` (state in memory only) that a test can SIGKILL and start again on the same
 * ports: a server restarted without its data, as a dev agent or a wiped server is.
 */
export interface RestartableConsul {
  readonly httpUrl: string;
  kill(): Promise<void>;
  /** Starts it again on the same ports; resolves once it is leader and its node is registered. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

const NODE = 'holdfast-restartable';

export async function startRestartableConsul(): Promise<RestartableConsul> {
  const binary = await consulBinary();
  if (!binary) throw new Error('consul binary not found: run `npm run servers:install`');
  const [http, server, serfLan, serfWan] = (await freePorts(4)) as [number, number, number, number];
  const httpUrl = `http://127.0.0.1:${http}`;
  const args = [
    'agent',
    '-dev',
    '-log-level=warn',
    `-node=${NODE}`,
    '-bind=127.0.0.1',
    '-client=127.0.0.1',
    `-http-port=${http}`,
    `-server-port=${server}`,
    `-serf-lan-port=${serfLan}`,
    `-serf-wan-port=${serfWan}`,
    '-dns-port=-1',
    '-grpc-port=-1',
    '-grpc-tls-port=-1',
    '-https-port=-1',
  ];
  let child: ChildProcess | undefined;
  let output = '';

  const kill = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  };

  const start = async (): Promise<void> => {
    output = '';
    const started = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`consul -dev exited at start:\n${output.slice(-2000)}`);
      if (await ready(httpUrl)) return;
      if (Date.now() > deadline) throw new Error(`consul -dev not ready within 60 s:\n${output.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  await start();
  return { httpUrl, kill, start, stop: kill };
}

async function ready(httpUrl: string): Promise<boolean> {
  try {
    const leader = (await (await fetch(`${httpUrl}/v1/status/leader`, { signal: AbortSignal.timeout(1000) })).json()) as string;
    if (!leader) return false;
    const node = (await (await fetch(`${httpUrl}/v1/catalog/node/${NODE}`, { signal: AbortSignal.timeout(1000) })).json()) as {
      Node?: unknown;
    } | null;
    return node?.Node != null;
  } catch {
    return false;
  }
}
