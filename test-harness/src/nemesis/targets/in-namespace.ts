import { execFile } from 'node:child_process';
import type { FakeClock } from '../clock.js';
import type { NetworkRig } from '../network.js';

/**
 * `env NAME=value ... command args`: how a server started through `ip netns exec` gets the fake
 * clock's environment (spawnServer passes no environment of its own).
 */
export function withClock(clock: FakeClock | undefined, command: string, args: readonly string[]): [string, string[]] {
  if (!clock) return [command, [...args]];
  const env = Object.entries(clock.env()).map(([name, value]) => `${name}=${value}`);
  return ['/usr/bin/env', [...env, command, ...args]];
}

/** Runs a short command inside a host's namespace: resolves with its exit code and stdout (never rejects). */
export function runIn(
  rig: NetworkRig,
  host: string,
  command: string,
  args: readonly string[],
  timeoutMs = 5000,
): Promise<{ code: number; stdout: string }> {
  const [cmd, argv] = rig.commandIn(host, command, args);
  return new Promise((resolve) => {
    execFile(cmd, argv, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1) : 0;
      resolve({ code, stdout });
    });
  });
}

const CONNECT = `const s = require('node:net').connect(+process.argv[2], process.argv[1]);
s.setTimeout(2000, () => process.exit(1));
s.on('connect', () => process.exit(0));
s.on('error', () => process.exit(1));`;

/** Whether a TCP connect from `host` to `address:port` succeeds (for servers with no probe tool of their own). */
export async function tcpOpenFrom(rig: NetworkRig, host: string, address: string, port: number): Promise<boolean> {
  return (await runIn(rig, host, process.execPath, ['-e', CONNECT, address, String(port)])).code === 0;
}
