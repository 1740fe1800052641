import { type ChildProcess, execFile } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { NetworkRig } from './network.js';

/**
 * TCP reachability between hosts of a rig, checked from inside their namespaces (the root namespace
 * never sends to them): a listener in one host, a connect from another.
 */
const LISTENER = `require('node:net').createServer((s) => s.end('hi')).listen(+process.argv[2], process.argv[1], () => console.log('listening'))`;
const CONNECT = `const s = require('node:net').connect(+process.argv[2], process.argv[1]);
s.setTimeout(+process.argv[3], () => { console.log('timeout'); process.exit(0); });
s.on('data', () => { console.log('ok'); process.exit(0); });
s.on('error', (e) => { console.log(e.code); process.exit(0); });`;

/** Starts a TCP listener in `host` on `port`; resolves once it listens. Kill the returned child to stop it. */
export async function listenIn(rig: NetworkRig, host: string, port: number): Promise<ChildProcess> {
  const child = rig.spawnIn(host, process.execPath, ['-e', LISTENER, rig.addressOf(host), String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  try {
    const [line] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['exited'])])) as string[];
    if (line !== 'listening') throw new Error(`listener in ${host} did not start: ${line}`);
  } finally {
    clearTimeout(timer);
  }
  return child;
}

/** `ok` when `from` reached `to:port` and read its greeting; otherwise `timeout` or the socket error code. */
export function tcpProbe(rig: NetworkRig, from: string, to: string, port: number, timeoutMs = 1500): Promise<string> {
  const [command, args] = rig.commandIn(from, process.execPath, ['-e', CONNECT, rig.addressOf(to), String(port), String(timeoutMs)]);
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs + 15_000, encoding: 'utf8' }, (error, stdout) => {
      if (error) reject(error);
      else resolve(stdout.trim());
    });
  });
}
