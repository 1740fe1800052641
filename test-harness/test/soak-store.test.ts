import { describe, expect, test } from 'vitest';
import { FencedStore, type StoreRequest } from '../src/soak/fenced-store.js';

/** The soak's judge must tell a broken lock from a correct one; these are the verdicts it gives. */
function request(op: StoreRequest['op'], worker: number, n: number, token: number, requestedAt = Date.now()): StoreRequest {
  return { op, worker, grant: `${worker}:${n}`, key: 'k', token: String(token), requestedAt };
}

/** The same message from a read-write lock's reader. */
function reader(op: StoreRequest['op'], worker: number, n: number, token: number): StoreRequest {
  return { ...request(op, worker, n, token), mode: 'shared' };
}

async function withStore(check: (store: FencedStore) => void): Promise<void> {
  const store = await FencedStore.start();
  try {
    check(store);
  } finally {
    await store.close();
  }
}

describe('the soak fenced store', () => {
  test('holders one after another: no overlap, every write accepted', () =>
    withStore((store) => {
      for (const [worker, token] of [
        [0, 1],
        [1, 2],
        [0, 3],
      ] as const) {
        expect(store.handle(request('begin', worker, token, token)).ok).toBe(true);
        expect(store.handle(request('write', worker, token, token)).ok).toBe(true);
        store.handle(request('end', worker, token, token));
      }
      expect(store.figures).toMatchObject({ grants: 3, overlaps: 0, staleWritesAccepted: 0, staleWritesRejected: 0, tokenRegressions: 0 });
    }));

  test('a second live holder while the first has not ended is an overlap', () =>
    withStore((store) => {
      store.handle(request('begin', 0, 1, 1));
      store.handle(request('begin', 1, 1, 2));
      expect(store.figures.overlaps).toBe(1);
      expect(store.overlapDetails[0]).toContain('1:1');
    }));

  test('a paused holder superseded by a newer grant is no overlap, and its late write is rejected', () =>
    withStore((store) => {
      store.handle(request('begin', 0, 1, 1));
      store.workerStopped(0);
      store.handle(request('begin', 1, 1, 2));
      store.workerResumed(0);
      expect(store.handle(request('write', 0, 1, 1)).ok).toBe(false);
      expect(store.figures).toMatchObject({ overlaps: 0, staleWritesRejected: 1, staleWritesAccepted: 0, holdsPaused: 1 });
    }));

  test('a newer grant with a lower or equal token is a token regression, and a write it lets through is a stale write accepted', () =>
    withStore((store) => {
      store.handle(request('begin', 0, 1, 5));
      store.workerStopped(0);
      store.handle(request('begin', 1, 1, 5));
      store.workerResumed(0);
      expect(store.figures.tokenRegressions).toBe(1);
      // The fence kept the first grant's token: its holder's write now lands although it was superseded.
      expect(store.handle(request('write', 0, 1, 5)).ok).toBe(true);
      expect(store.figures.staleWritesAccepted).toBe(1);
    }));

  test('a holder paused between asking for the lock and its first message is judged paused', () =>
    withStore((store) => {
      const requestedAt = Date.now() - 1000;
      store.handle(request('begin', 1, 1, 2));
      store.handle(request('end', 1, 1, 2));
      store.workerStopped(0);
      store.workerResumed(0);
      expect(store.handle(request('begin', 0, 1, 1, requestedAt)).ok).toBe(false);
      expect(store.figures).toMatchObject({ tokenRegressions: 0, staleWritesRejected: 1 });
    }));

  test('replies say stop once the target number of grants is reached', () =>
    withStore((store) => {
      store.stopAt(2);
      expect(store.handle(request('begin', 0, 1, 1)).stop).toBe(false);
      expect(store.handle(request('begin', 0, 2, 2)).stop).toBe(true);
    }));

  describe('read-write mode', () => {
    test('readers overlap each other, also beginning out of token order, and every read is accepted', () =>
      withStore((store) => {
        expect(store.handle(reader('begin', 0, 1, 6)).ok).toBe(true);
        expect(store.handle(reader('begin', 1, 1, 5)).ok).toBe(true);
        expect(store.handle(reader('write', 1, 1, 5)).ok).toBe(true);
        expect(store.handle(reader('write', 0, 1, 6)).ok).toBe(true);
        store.handle(reader('end', 0, 1, 6));
        store.handle(reader('end', 1, 1, 5));
        expect(store.handle(request('begin', 2, 1, 7)).ok).toBe(true);
        expect(store.handle(request('write', 2, 1, 7)).ok).toBe(true);
        expect(store.figures).toMatchObject({
          grants: 3,
          overlaps: 0,
          tokenRegressions: 0,
          staleWritesAccepted: 0,
          staleWritesRejected: 0,
        });
      }));

    test('a writer beginning while a live reader holds is an overlap, and so is a reader while a live writer holds', () =>
      withStore((store) => {
        store.handle(reader('begin', 0, 1, 1));
        store.handle(request('begin', 1, 1, 2));
        expect(store.figures.overlaps).toBe(1);
        store.handle(reader('begin', 2, 1, 3));
        expect(store.figures.overlaps).toBe(2);
        expect(store.overlapDetails.join('\n')).toContain('1:1 held it');
      }));

    test("a paused reader's late read after a writer got in is refused", () =>
      withStore((store) => {
        store.handle(reader('begin', 0, 1, 1));
        store.workerStopped(0);
        store.handle(request('begin', 1, 1, 2));
        store.handle(request('end', 1, 1, 2));
        store.handle(reader('begin', 2, 1, 3));
        store.workerResumed(0);
        expect(store.handle(reader('write', 0, 1, 1)).ok).toBe(false);
        // The reader that came after the writer reads on.
        expect(store.handle(reader('write', 2, 1, 3)).ok).toBe(true);
        expect(store.figures).toMatchObject({ overlaps: 0, staleWritesRejected: 1, staleWritesAccepted: 0 });
      }));

    test("a writer's token not above an earlier reader's is a regression; a reader's need only be above the writers'", () =>
      withStore((store) => {
        store.handle(reader('begin', 0, 1, 4));
        store.handle(reader('end', 0, 1, 4));
        store.handle(request('begin', 1, 1, 3));
        expect(store.figures.tokenRegressions).toBe(1);
        store.handle(request('end', 1, 1, 3));
        store.handle(reader('begin', 2, 1, 2));
        expect(store.figures.tokenRegressions).toBe(2);
      }));

    test("a writer's write after a later reader began is refused", () =>
      withStore((store) => {
        store.handle(request('begin', 0, 1, 1));
        store.workerStopped(0);
        store.handle(reader('begin', 1, 1, 2));
        store.workerResumed(0);
        expect(store.handle(request('write', 0, 1, 1)).ok).toBe(false);
        expect(store.figures).toMatchObject({ overlaps: 0, staleWritesRejected: 1, staleWritesAccepted: 0 });
      }));
  });
});
