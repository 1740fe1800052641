import { randomBytes } from 'node:crypto';
import { ErrorCode, type Lock, type LockProvider } from '@holdfast/core';
import { codeOf, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { READ_WRITE_FLAG } from '../src/constants.js';
import { parseFlagSafe } from '../src/consul-http.js';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');
const PREFIX = 'holdfast-rw';
const CALL_MS = 5000;
/** Races of a reader against a writer on a free key: enough that both read the empty record before either writes, many times over. */
const RACES = 30;

interface RecordSeen {
  readonly flags: string;
  readonly holders: Record<string, boolean>;
  readonly modes: Record<string, string>;
}

describe.skipIf(!consul.url)("read-write locks on Consul: the semaphore's `.lock` record with each holder's mode", () => {
  const http = `http://${consul.url?.replace('consul://', '') ?? ''}`;
  const providers: LockProvider[] = [];
  const provider = (): LockProvider => {
    const created = createConsulProvider({ url: http, prefix: PREFIX, lockDelayMs: 1000 });
    providers.push(created);
    return created;
  };
  const freshKey = (name: string): string => `${name}-${randomBytes(4).toString('hex')}`;
  /** The coordination record as Consul stores it; Flags kept exact (they exceed 2^53) by the adapter's own parser. */
  const recordOf = async (key: string): Promise<RecordSeen | null> => {
    const response = await fetch(`${http}/v1/kv/${PREFIX}/${key}/.lock`, { signal: AbortSignal.timeout(CALL_MS) });
    if (response.status === 404) return null;
    const [entry] = parseFlagSafe<[{ Flags: string; Value: string }]>(await response.text());
    const record = JSON.parse(Buffer.from(entry.Value, 'base64').toString('utf8')) as {
      Holders: RecordSeen['holders'];
      Modes: RecordSeen['modes'];
    };
    return { flags: entry.Flags, holders: record.Holders, modes: record.Modes };
  };
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
  });

  test('the record lists every holder with its mode, under its own flags; holders() reports the modes', async () => {
    const key = freshKey('record');
    const [a, b] = [provider(), provider()];
    const readers = await within(Promise.all([a.readWrite(key).tryRead(), b.readWrite(key).tryRead()]), CALL_MS, 'tryRead answers');
    expect(
      readers.every((reader) => reader !== null),
      'two readers did not coexist',
    ).toBe(true);
    const shared = await recordOf(key);
    expect(shared?.flags, 'the record is not under the read-write flags').toBe(READ_WRITE_FLAG);
    expect(Object.keys(shared!.holders)).toHaveLength(2);
    expect(Object.values(shared!.modes)).toEqual(['shared', 'shared']);
    const listed = await within(a.readWrite(key).holders(), CALL_MS, 'holders() answers');
    expect(listed.map((holder) => holder.details?.['mode'])).toEqual(['shared', 'shared']);
    expect(listed.map((holder) => holder.token)).toEqual(readers.map((reader) => reader!.token).sort((x, y) => (x < y ? -1 : 1)));
    expect(await within(b.readWrite(key).tryWrite(), CALL_MS, 'tryWrite answers'), 'a writer got in beside readers').toBeNull();

    await within(Promise.all(readers.map((reader) => reader!.release())), CALL_MS, 'release answers');
    expect(await recordOf(key), 'the last holder to leave left its record behind').toBeNull();
    const writer = await within(b.readWrite(key).tryWrite(), CALL_MS, 'tryWrite answers');
    expect(writer, 'a free key refused a writer').not.toBeNull();
    const exclusive = await recordOf(key);
    expect(Object.values(exclusive!.modes)).toEqual(['exclusive']);
    expect(await within(a.readWrite(key).tryRead(), CALL_MS, 'tryRead answers'), 'a reader got in beside the writer').toBeNull();
    // The key is a read-write lock now: a plain lock or a semaphore of it is a conflict, not a wait.
    expect(codeOf(await a.tryAcquire(key).catch((error: unknown) => error))).toBe(ErrorCode.Conflict);
    expect(
      codeOf(
        await a
          .semaphore(key, 2)
          .tryAcquire()
          .catch((error: unknown) => error),
      ),
    ).toBe(ErrorCode.Conflict);
    await within(writer!.release(), CALL_MS, 'release answers');
  });

  test(`a reader and a writer racing from two providers on a free key: exactly one is granted, ${RACES} times`, async () => {
    const [a, b] = [provider(), provider()];
    for (let race = 0; race < RACES; race++) {
      const key = freshKey('race');
      const [reader, writer] = await within(
        Promise.all([a.readWrite(key).tryRead(), b.readWrite(key).tryWrite()]),
        CALL_MS,
        'both attempts answer',
      );
      const granted = [reader, writer].filter((lock): lock is Lock => lock !== null);
      expect(granted, `race ${race}: ${granted.length} of a reader and a writer were granted`).toHaveLength(1);
      const record = await recordOf(key);
      expect(Object.values(record!.modes), `race ${race}: the record does not show the winner alone`).toEqual([
        reader ? 'shared' : 'exclusive',
      ]);
      await within(granted[0]!.release(), CALL_MS, 'release answers');
    }
  });
});
