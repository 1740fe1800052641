import { describe, expect, test } from 'vitest';
import { adapterUrl, clampToTimerRange, createProvider, MAX_TIMER_MS, providerOptions } from '../src/backend-index.js';
import { ErrorCode, InvalidArgumentError } from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

/** Node fires a setTimeout longer than this after 1 ms: a bound of 2^31 ms would be a bound of 1 ms. */
const ABOVE = MAX_TIMER_MS + 1;
const LIMIT = new RegExp(`${MAX_TIMER_MS} ms`);

describe('durations that become timers are refused above the timer range, naming the option and the limit', () => {
  test.each(['callTimeoutMs', 'closeTimeoutMs', 'pollIntervalMs'])('%s above 2^31-1 ms', (name) => {
    const backend = new ScriptedBackend();
    const error = (() => {
      try {
        createProvider(backend, { [name]: ABOVE });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(String(error)).toContain(name);
    expect(String(error)).toMatch(LIMIT);
    expect(backend.calls).toEqual([]);
  });

  test('exactly 2^31-1 ms is accepted', async () => {
    const provider = createProvider(new ScriptedBackend(), {
      callTimeoutMs: MAX_TIMER_MS,
      closeTimeoutMs: MAX_TIMER_MS,
      pollIntervalMs: MAX_TIMER_MS,
    });
    await provider.close();
  });

  test('providerOptions(), which adapters call before they create a client, refuses them too', () => {
    for (const name of ['callTimeoutMs', 'closeTimeoutMs'] as const) {
      expect(() => providerOptions({ [name]: ABOVE }), name).toThrow(LIMIT);
      expect(() => providerOptions({ [name]: 0 }), name).toThrow(InvalidArgumentError);
      expect(providerOptions({ [name]: MAX_TIMER_MS })).toEqual({ [name]: MAX_TIMER_MS });
    }
  });

  test("the URL form: an adapter's duration parameter above the range is refused with the parameter's name", () => {
    const spec = {
      schemes: ['sql:'],
      example: 'sql://host/db',
      own: { pollInterval: ['pollIntervalMs', 'duration'], connectTimeout: ['connectTimeoutMs', 'duration'] },
      driver: { name: 'driver', parameters: new Set<string>() },
    } as const;
    for (const text of ['sql://h/db?pollInterval=25d', 'sql://h/db?connectTimeout=2147483648', 'sql://h/db?pollInterval=596h31m23s648ms']) {
      expect(() => adapterUrl(text, spec), text).toThrow(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
      expect(() => adapterUrl(text, spec), text).toThrow(LIMIT);
    }
    expect(() => adapterUrl('sql://h/db?pollInterval=25d', spec)).toThrow(/url pollInterval/);
    expect(adapterUrl('sql://h/db?pollInterval=24d&connectTimeout=2147483647', spec).settings).toEqual({
      pollIntervalMs: 24 * 86_400_000,
      connectTimeoutMs: MAX_TIMER_MS,
    });
  });
});

describe('where a huge value means "no limit"', () => {
  test('clampToTimerRange keeps a value in range and turns a larger one into the longest timer', () => {
    expect(clampToTimerRange(2_000)).toBe(2_000);
    expect(clampToTimerRange(MAX_TIMER_MS)).toBe(MAX_TIMER_MS);
    expect(clampToTimerRange(Number.MAX_SAFE_INTEGER)).toBe(MAX_TIMER_MS);
  });

  test('acquire({ waitMs: 2^31 }) on a held key keeps waiting instead of giving up at 1 ms, until its signal ends it', async () => {
    const backend = new ScriptedBackend();
    backend.holders.set('k', 'someone else');
    const provider = createProvider(backend, { pollIntervalMs: 10 });
    const stop = new AbortController();
    const waiting = provider.acquire('k', { waitMs: ABOVE, signal: stop.signal }).then(
      () => 'granted',
      (error: unknown) => (error as { code?: string }).code,
    );
    // No event says "still waiting": polls a few times (10 ms each) and checks it has not given up.
    const early = await Promise.race([waiting, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 200))]);
    expect(early).toBe('still waiting');
    expect(backend.timesOf('tryGrant').length).toBeGreaterThan(1);
    stop.abort();
    expect(await waiting).toBe(ErrorCode.Aborted);
    await provider.close();
  });
});
