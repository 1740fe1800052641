import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { FaultProxy, hungListener, type ServerAddress } from '../src/faults/index.js';
import { until } from '../src/helpers/index.js';

/** A client that records what it receives and when. */
class Client {
  received = '';
  readonly arrivals: { text: string; at: number }[] = [];
  closed = false;
  private constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => {
      this.received += text;
      this.arrivals.push({ text, at: performance.now() });
    });
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }

  static async connect(address: ServerAddress): Promise<Client> {
    const socket = createConnection(address);
    socket.setNoDelay(true);
    await once(socket, 'connect');
    return new Client(socket);
  }

  /** Resolves once `text` was received; rejects with a clear message after `withinMs`. */
  async waitFor(text: string, withinMs: number): Promise<number> {
    return until(
      () => this.received.includes(text),
      withinMs,
      () => `"${text}" arrives (got "${this.received}")`,
      { everyMs: 5 },
    );
  }
}

let echo: Server;
let echoAddress: ServerAddress;
const clients: Client[] = [];
const proxies: FaultProxy[] = [];

async function connect(address: ServerAddress): Promise<Client> {
  const client = await Client.connect(address);
  clients.push(client);
  return client;
}

async function proxy(): Promise<FaultProxy> {
  const started = await FaultProxy.start(echoAddress);
  proxies.push(started);
  return started;
}

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoAddress = { host: '127.0.0.1', port: (echo.address() as { port: number }).port };
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

describe('FaultProxy', () => {
  test('forwards both directions', async () => {
    const p = await proxy();
    const client = await connect(p.address);
    client.socket.write('hello');
    await client.waitFor('hello', 1000);
    expect(p.connectionsAccepted).toBe(1);
    expect(p.chunksFromClients).toBe(1);
  });

  test('refuses a non-loopback upstream', async () => {
    await expect(FaultProxy.start({ host: '192.0.2.1', port: 1 })).rejects.toThrow(/loopback/);
  });

  test('holds the k-th client chunk, keeps the order on its connection, lets other connections through', async () => {
    const p = await proxy();
    const held = await connect(p.address);
    const other = await connect(p.address);
    held.socket.write('one;');
    await held.waitFor('one;', 1000);
    const hold = p.holdClientChunk(1, 400);
    const sentAt = performance.now();
    held.socket.write('two;');
    const chunk = await hold.engaged;
    expect(chunk.preview).toBe('two;');
    expect(chunk.connection).toBe(1);
    held.socket.write('three;');
    other.socket.write('other;');
    await other.waitFor('other;', 300);
    expect(held.received).toBe('one;');
    await held.waitFor('three;', 1500);
    const twoAt = held.arrivals.find((a) => a.text.includes('two;'))!.at;
    expect(twoAt - sentAt).toBeGreaterThanOrEqual(390);
    expect(held.received).toBe('one;two;three;');
    await hold.released;
  });

  test('counts chunks from the moment the hold is armed', async () => {
    const p = await proxy();
    const client = await connect(p.address);
    client.socket.write('a;');
    await client.waitFor('a;', 1000);
    const hold = p.holdClientChunk(2, 300);
    client.socket.write('b;');
    await client.waitFor('b;', 1000);
    client.socket.write('c;');
    expect((await hold.engaged).preview).toBe('c;');
    await client.waitFor('c;', 1500);
  });

  test('a cancelled hold that never engaged releases at once', async () => {
    const p = await proxy();
    const hold = p.holdClientChunk(5, 10_000);
    hold.cancel();
    await hold.released;
    const client = await connect(p.address);
    client.socket.write('x');
    const ms = await client.waitFor('x', 1000);
    expect(ms).toBeLessThan(500);
  });

  test('pause buffers both directions until resume', async () => {
    const p = await proxy();
    const client = await connect(p.address);
    p.pause();
    client.socket.write('paused;');
    // Asserting that nothing arrives needs a wait: 300 ms is many loopback round trips.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.received).toBe('');
    p.resume();
    await client.waitFor('paused;', 1000);
  });

  test('cut("silent") closes open connections and answers new ones with silence', async () => {
    const p = await proxy();
    const before = await connect(p.address);
    before.socket.write('x');
    await before.waitFor('x', 1000);
    p.cut('silent');
    await until(() => before.closed, 1000, 'cut() closes the open connection', { everyMs: 5 });
    const after = await connect(p.address);
    after.socket.write('anyone?');
    await new Promise((resolve) => setTimeout(resolve, 300)); // absence of an answer needs a wait
    expect(after.received).toBe('');
    expect(p.openConnections).toBe(1);
  });

  test('cut("refuse") closes open connections and refuses new ones', async () => {
    const p = await proxy();
    const before = await connect(p.address);
    p.cut('refuse');
    await until(() => before.closed, 1000, 'cut() closes the open connection', { everyMs: 5 });
    await expect(Client.connect(p.address)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  test('close() drops a held chunk and releases its hold', async () => {
    const p = await proxy();
    const client = await connect(p.address);
    const hold = p.holdClientChunk(1, 60_000);
    client.socket.write('never');
    await hold.engaged;
    const start = performance.now();
    await p.close();
    await hold.released;
    expect(performance.now() - start).toBeLessThan(1000);
    await until(() => client.closed, 1000, 'close() closes the client connection', { everyMs: 5 });
    expect(client.received).toBe('');
  });
});

describe('hungListener', () => {
  test('accepts, never answers, and counts a connection open until the client really closed it', async () => {
    const hung = await hungListener();
    try {
      const client = await connect(hung.address);
      client.socket.write('ping');
      await until(() => hung.openConnections === 1, 1000, 'the connection is accepted', { everyMs: 5 });
      await new Promise((resolve) => setTimeout(resolve, 200)); // absence of an answer needs a wait
      expect(client.received).toBe('');
      client.socket.end();
      await new Promise((resolve) => setTimeout(resolve, 300)); // a half-close must stay counted: needs a wait
      expect(hung.openConnections, 'a client that only half-closed is still connected').toBe(1);
      client.socket.destroy();
      await until(() => hung.openConnections === 0, 1000, 'a destroyed client connection is no longer counted open', { everyMs: 5 });
      expect(hung.connectionsAccepted).toBe(1);
    } finally {
      await hung.close();
    }
  });
});
