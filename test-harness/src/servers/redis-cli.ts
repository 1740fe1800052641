import { execFile } from 'node:child_process';
import { onPath } from './binaries.js';

/**
 * One command through `redis-cli` (from Debian's redis-tools, installed with redis-server), bounded:
 * a SIGSTOPped node never answers, and the harness must not hang on it.
 */
export function redisCli(port: number, args: string[], timeoutMs = 5000): Promise<string> {
  const bin = onPath('redis-cli');
  if (!bin) return Promise.reject(new Error('redis-cli not found on PATH; run `npm run servers:install` (redis-tools)'));
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      ['-h', '127.0.0.1', '-p', String(port), ...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli -p ${port} ${args.join(' ')}: ${err.message} ${stderr}`.trim()));
        else resolve(stdout);
      },
    );
  });
}

/** `INFO`-style `field:value` lines as a map. */
export function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return fields;
}

/** Sends SIGSTOP / SIGCONT to a server process: a hung node, as its peers see it. */
export function signalProcess(pid: number | undefined, signal: 'SIGSTOP' | 'SIGCONT'): void {
  // Never 0 or negative: those address process groups (or every process), not one server.
  if (pid === undefined || pid <= 0) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone: nothing to pause or resume
  }
}
