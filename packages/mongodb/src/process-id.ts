import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * MongoDB's distlock process id: `<host>:<port>:<epoch seconds>:<random signed 64-bit>`, fixed for
 * the life of a provider instance. Node apps have no server port of their own to report unless told
 * (`port` option); the OS pid stands in for it, so ids still tell processes on one host apart.
 */
export function newProcessId(port: number = process.pid): string {
  const epochSeconds = Math.floor(Date.now() / 1000);
  return `${hostname()}:${port}:${epochSeconds}:${randomBytes(8).readBigInt64BE()}`;
}
