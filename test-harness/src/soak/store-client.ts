import { createConnection, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { ServerAddress } from '../faults/address.js';
import type { StoreRequest } from './fenced-store.js';

/** A worker's connection to the fenced store: one request in flight at a time. */
export class StoreClient {
  private waiting: ((reply: { ok: boolean; stop: boolean }) => void) | undefined;
  private failed: ((error: Error) => void) | undefined;

  private constructor(private readonly socket: Socket) {
    const lines = createInterface({ input: socket });
    lines.on('error', () => undefined);
    lines.on('line', (line) => {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve?.(JSON.parse(line) as { ok: boolean; stop: boolean });
    });
    socket.on('close', () => this.failed?.(new Error('the fenced store closed the connection')));
  }

  static async connect(address: ServerAddress): Promise<StoreClient> {
    const socket = createConnection(address);
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('error', () => undefined);
    return new StoreClient(socket);
  }

  send(request: StoreRequest): Promise<{ ok: boolean; stop: boolean }> {
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failed = reject;
      this.socket.write(`${JSON.stringify(request)}\n`);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
