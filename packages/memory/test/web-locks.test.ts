import { ErrorCode, LockManager, type LockProvider } from '@holdfast/core';
import { abortedWithin, codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { afterEach, describe, expect, test } from 'vitest';
import { createMemoryProvider, MemoryStore } from '../src/index.js';

/** The Web Locks layer (W3C `navigator.locks` semantics) over two memory providers standing for two processes. */
describe('LockManager on memory', () => {
  const providers: LockProvider[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((provider) => provider.close()));
  });
  const managers = (): [LockManager, LockManager, LockProvider] => {
    const store = new MemoryStore();
    const a = createMemoryProvider({ store });
    const b = createMemoryProvider({ store });
    providers.push(a, b);
    return [new LockManager(a), new LockManager(b), b];
  };

  test('the callback runs holding the lock, its value settles the request, and the lock is released after it', async () => {
    const [a, b] = managers();
    const order: string[] = [];
    let release!: () => void;
    const first = a.request('job', async (lock) => {
      expect(lock?.name).toBe('job');
      expect(lock?.mode).toBe('exclusive');
      order.push('first starts');
      await new Promise<void>((resolve) => (release = resolve));
      order.push('first ends');
      return 'first value';
    });
    await within(
      (async () => {
        while (!release) await new Promise((resolve) => setTimeout(resolve, 1));
      })(),
      1000,
      'the first callback runs',
    );
    const second = b.request('job', async () => {
      order.push('second runs');
      return 42;
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(order, 'the second request ran while the first held the lock').toEqual(['first starts']);
    release();
    expect(await within(first, 1000, 'the first request settles')).toBe('first value');
    expect(await within(second, 1000, 'the second request settles')).toBe(42);
    expect(order).toEqual(['first starts', 'first ends', 'second runs']);
  });

  test('shared requests hold together; an exclusive one waits for them; a thrown error rejects and still releases', async () => {
    const [a, b] = managers();
    let inside = 0;
    let most = 0;
    const reader = (manager: LockManager) =>
      manager.request('doc', { mode: 'shared' }, async (lock) => {
        expect(lock?.mode).toBe('shared');
        most = Math.max(most, ++inside);
        await new Promise((resolve) => setTimeout(resolve, 30));
        inside--;
      });
    const readers = Promise.all([reader(a), reader(b)]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const writer = b.request('doc', async () => inside);
    await within(readers, 1000, 'the readers finish');
    expect(most, 'shared requests did not hold together').toBe(2);
    expect(await within(writer, 1000, 'the writer runs'), 'the writer ran beside readers').toBe(0);
    const failure = new Error('work failed');
    expect(
      await rejection(
        within(
          a.request('doc', () => Promise.reject(failure)),
          1000,
          'a failing callback',
        ),
      ),
    ).toBe(failure);
    expect(
      await within(
        b.request('doc', { ifAvailable: true }, (lock) => lock !== null),
        1000,
        'ifAvailable',
      ),
    ).toBe(true);
  });

  test('ifAvailable calls back with null when the lock is taken; steal takes it and tells the old holder', async () => {
    const [a, b] = managers();
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let oldSignal: AbortSignal | undefined;
    const holder = a.request('res', async (lock) => {
      oldSignal = lock!.signal;
      entered();
      await new Promise(() => undefined);
    });
    await within(inside, 1000, 'the holder runs');
    expect(
      await within(
        b.request('res', { ifAvailable: true }, (lock) => lock),
        1000,
        'ifAvailable answers',
      ),
    ).toBeNull();
    const stolen = await within(
      b.request('res', { steal: true }, (lock) => lock?.name),
      1000,
      'a steal is granted',
    );
    expect(stolen).toBe('res');
    const reason = await abortedWithin(oldSignal!, 1000, 'the old holder is told');
    expect(codeOf(reason)).toBe(ErrorCode.Lost);
    expect(codeOf(await rejection(within(holder, 1000, "the old holder's request settles")))).toBe(ErrorCode.Lost);
  });

  test('a signal aborts the wait with its reason; query() reports held and pending requests', async () => {
    const [a, b, providerB] = managers();
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let finish!: () => void;
    const holder = a.request('q', async () => {
      entered();
      await new Promise<void>((resolve) => (finish = resolve));
    });
    await within(inside, 1000, 'the holder runs');
    const cancel = new AbortController();
    const waiting = b.request('q', { signal: cancel.signal }, () => 'never');
    await new Promise((resolve) => setTimeout(resolve, 10));
    const snapshot = await within(b.query(), 1000, 'query answers');
    expect(snapshot.pending).toEqual([{ name: 'q', mode: 'exclusive', clientId: providerB.owner }]);
    expect(snapshot.held, 'the holder in another instance').toContainEqual({ name: 'q', mode: 'exclusive', clientId: providers[0]!.owner });
    const why = new Error('user left');
    cancel.abort(why);
    expect(await rejection(within(waiting, 1000, 'the aborted request settles'))).toBe(why);
    expect((await b.query()).pending).toEqual([]);
    finish();
    await within(holder, 1000, 'the holder finishes');
    expect((await b.query()).held).toEqual([]);
  });

  test('bad requests are typed errors before any lock is taken', async () => {
    const [a] = managers();
    const cases: [string, () => Promise<unknown>][] = [
      ['steal with ifAvailable', () => a.request('x', { steal: true, ifAvailable: true }, () => 1)],
      ['shared steal', () => a.request('x', { steal: true, mode: 'shared' }, () => 1)],
      ['signal with ifAvailable', () => a.request('x', { signal: new AbortController().signal, ifAvailable: true }, () => 1)],
      ['a reserved name', () => a.request('-x', () => 1)],
      ['no callback', () => a.request('x', {} as never)],
      ['a bad mode', () => a.request('x', { mode: 'read' as never }, () => 1)],
    ];
    for (const [what, call] of cases) expect(codeOf(await rejection(call(), what)), what).toBe(ErrorCode.InvalidArgument);
    expect((await a.query()).held).toEqual([]);
  });

  test('an origin scopes names: the same name in two origins does not conflict, and query() shows only its own', async () => {
    const store = new MemoryStore();
    const provider = createMemoryProvider({ store });
    providers.push(provider);
    const [east, west] = [new LockManager(provider, { origin: 'east/' }), new LockManager(provider, { origin: 'west/' })];
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const eastJob = east.request('job', async () => {
      entered();
      await held;
    });
    await within(inside, 1000, 'the east request holds');
    expect(
      await within(
        west.request('job', { ifAvailable: true }, (lock) => lock?.name),
        1000,
        'west answers',
      ),
    ).toBe('job');
    // Memory has read-write locks, so an exclusive request is the writer of the key's read-write lock.
    const backendKey = await provider.readWrite('east/job').holders();
    expect(
      backendKey.map((info) => info.key),
      'the backend key carries the origin',
    ).toEqual(['east/job']);
    expect((await east.query()).held.map((info) => info.name)).toEqual(['job']);
    expect((await west.query()).held, "west's query() does not show east's lock").toEqual([]);
    finish();
    await within(eastJob, 1000, 'the east request settles');
    expect(() => new LockManager(provider, { origin: 7 as never }), 'a non-string origin').toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidArgument }),
    );
  });
});
