import type { AddressInfo, Server } from 'node:net';

/** A loopback TCP address. Fault tooling never points anywhere but 127.0.0.0/8 or ::1. */
export interface ServerAddress {
  readonly host: string;
  readonly port: number;
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

export function assertLoopback(address: ServerAddress, what: string): void {
  if (!LOOPBACK.test(address.host)) throw new Error(`${what} must be a loopback address, got ${address.host}`);
}

/** Starts listening on 127.0.0.1 at a free port and returns that address. */
export async function listenOnLoopback(server: Server): Promise<ServerAddress> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return { host: '127.0.0.1', port };
}

/** The host and port of a server URL such as redis://127.0.0.1:6380 (loopback only). */
export function addressOf(url: string): ServerAddress {
  const parsed = new URL(url);
  const address = { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port) };
  if (!address.port) throw new Error(`${url} names no port`);
  assertLoopback(address, 'a test server');
  return address;
}

/** The same URL (scheme, path, options) pointing at another loopback address: a proxy or a hung listener. */
export function urlAt(url: string, address: ServerAddress): string {
  assertLoopback(address, 'a fault address');
  const parsed = new URL(url);
  parsed.hostname = address.host.includes(':') ? `[${address.host}]` : address.host;
  parsed.port = String(address.port);
  return parsed.href;
}
