import { createLockProvider, ErrorCode, type LockProvider } from '@holdfast/core';
import { type HungListener, hungListener } from '@holdfast/test-harness/faults';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ConsulLockOptions, createConsulProvider } from '../src/index.js';

/**
 * Bad options are refused before anything talks to Consul: the address is a listener that counts
 * connections (and never answers), so a provider that reached it would show.
 */
describe('malformed Consul options: InvalidArgumentError before any request', () => {
  let listener: HungListener;
  let base: string;
  const made: LockProvider[] = [];
  beforeAll(async () => {
    listener = await hungListener();
    base = `consul://${listener.address.host}:${listener.address.port}`;
  });
  afterAll(async () => {
    await Promise.all(made.map((p) => p.close()));
    await listener.close();
  });

  const refusedUrl = async (query: string, parameter: string | RegExp): Promise<void> => {
    const error = await createLockProvider(`${base}${query}`).then(
      (provider) => {
        made.push(provider);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error, query).toMatchObject({ code: ErrorCode.InvalidArgument });
    expect((error as Error).message, query).toMatch(parameter);
  };

  test.each([
    ['?monitorRetries=abc', 'monitorRetries'],
    ['?monitorRetries=-5', 'monitorRetries'],
    ['?monitorRetries=1.5', 'monitorRetries'],
    ['?monitorRetries=', 'monitorRetries'],
    ['?lockDelayRetry=0', 'lockDelayRetry'],
    ['?lockDelayRetry=soon', 'lockDelayRetry'],
    ['?lockDelay=61s', 'lockDelay'],
    ['?lockDelay=-1s', 'lockDelay'],
    ['?monitorRetryTime=0', 'monitorRetry'],
    ['?session=perlock', 'session'],
    ['?tls=yes', 'tls'],
    ['?lockdelay=1s', 'lockdelay'],
    ['?prefix=a&prefix=b', 'prefix'],
    ['/app?prefix=other', 'prefix'],
    ['?callTimeout=0', 'callTimeout'],
    ['?closeTimeout=forever', 'closeTimeout'],
  ])('%s', async (query, parameter) => {
    await refusedUrl(query, new RegExp(parameter));
  });

  test('a URL that does not parse, credentials in it, and unknown adapter options', async () => {
    await refusedUrl(':notaport', /url/i);
    const withCredentials = await createLockProvider(`consul://user:secret@${listener.address.host}:${listener.address.port}`).catch(
      (e: unknown) => e,
    );
    expect(withCredentials).toMatchObject({ code: ErrorCode.InvalidArgument });
    const unknownAdapter = await createLockProvider(base, { adapter: { lockDelay: '1s' } }).catch((e: unknown) => e);
    expect(unknownAdapter).toMatchObject({ code: ErrorCode.InvalidArgument });
    const twice = await createLockProvider(`${base}?token=a`, { adapter: { token: 'b' } }).catch((e: unknown) => e);
    expect(twice).toMatchObject({ code: ErrorCode.InvalidArgument });
  });

  test.each<[string, Partial<ConsulLockOptions> & Record<string, unknown>]>([
    ['monitorRetries -5', { monitorRetries: -5 }],
    ['monitorRetries NaN', { monitorRetries: Number.NaN }],
    ['lockDelayRetryMs 0', { lockDelayRetryMs: 0 }],
    ['lockDelayMs 1.5', { lockDelayMs: 1.5 }],
    ['monitorRetryMs Infinity', { monitorRetryMs: Infinity }],
    ['callTimeoutMs 0', { callTimeoutMs: 0 }],
    ['closeTimeoutMs -1', { closeTimeoutMs: -1 }],
    ['sessionMode', { sessionMode: 'each' as 'shared' }],
    ['prefix "/"', { prefix: '/' }],
    ['token 42', { token: 42 as unknown as string }],
    ['an unknown option', { lockDelay: 1000 }],
    ['url ftp:', { url: 'ftp://127.0.0.1:1' }],
    ['url not a URL', { url: 'localhost:8500' }],
    ['url consul: (its parameters are read by createLockProvider only)', { url: 'consul://127.0.0.1:1?lockDelay=1s' }],
  ])('createConsulProvider: %s', (_name, options) => {
    const address = `http://${listener.address.host}:${listener.address.port}`;
    expect(() => made.push(createConsulProvider({ url: address, ...options } as ConsulLockOptions))).toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidArgument }),
    );
  });

  test('one vocabulary: address was renamed url, refused by name (factory, adapter); provider-level options inside adapter are refused', async () => {
    const url = `http://${listener.address.host}:${listener.address.port}`;
    const renamed = expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(/address was renamed url/) });
    expect(() => made.push(createConsulProvider({ address: url } as never))).toThrow(renamed);
    await expect(createLockProvider(base, { adapter: { address: url } })).rejects.toEqual(renamed);
    const unknown = expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(/unknown Consul option/) });
    await expect(createLockProvider(base, { adapter: { owner: 'x' } })).rejects.toEqual(unknown);
    await expect(createLockProvider(base, { adapter: { pollIntervalMs: 100 } })).rejects.toEqual(unknown);
  });

  test('the provider-level options are honoured by the factory and by createLockProvider', async () => {
    const url = `http://${listener.address.host}:${listener.address.port}`;
    const logger = { warn: () => undefined };
    const direct = createConsulProvider({
      url,
      owner: 'direct',
      callTimeoutMs: 100,
      closeTimeoutMs: 100,
      ttlBelowMinimum: 'reject',
      logger,
    });
    const fromUrl = await createLockProvider(base, { owner: 'from-url', ttlBelowMinimum: 'reject', logger });
    made.push(direct, fromUrl);
    expect([direct.owner, fromUrl.owner]).toEqual(['direct', 'from-url']);
    // 'reject': a ttl below Consul's 10 s minimum is refused before any request (the default would raise it).
    for (const provider of [direct, fromUrl]) {
      await expect(provider.tryAcquire('k', { ttlMs: 1000 })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
    }
  });

  test('nothing reached the server, and good options are accepted', async () => {
    expect(listener.connectionsAccepted).toBe(0);
    const good = await createLockProvider(
      `${base}/app?lockDelay=1s&lockDelayRetry=200ms&monitorRetries=0&monitorRetryTime=1s&session=per-lock&tls=false&callTimeout=2s&closeTimeout=3s&dc=dc1`,
      {
        adapter: { token: 'secret' },
        owner: 'options-test',
      },
    );
    made.push(good);
    expect(good.owner).toBe('options-test');
    expect(listener.connectionsAccepted).toBe(0);
  });
});
