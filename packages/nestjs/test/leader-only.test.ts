import { createLockProvider, ErrorCode } from '@holdfast/core';
import { codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Inject, Injectable, SetMetadata } from '@nestjs/common';
import { describe, expect, test } from 'vitest';
import { currentLock, LeaderOnly } from '../src/index.js';
import { backendsUnderTest, deferred, STEP_MS, startApp } from './nest-apps.js';

const redis = await useBackend('redis');

/** Long enough that the second instance's call surely comes inside it on a loaded machine; the test asserts it did. */
const AT_LEAST_MS = 3000;

/** Shared by the instances of one test, as a database would be: which instance ran, and the gate keeping it running. */
class Runs {
  readonly ran: string[] = [];
  readonly entered = deferred();
  readonly open = deferred();
}

const INSTANCE = 'instance name';

@Injectable()
class Reports {
  constructor(
    @Inject(Runs) private readonly runs: Runs,
    @Inject(INSTANCE) private readonly instance: string,
  ) {}

  // @Cron / @Interval of @nestjs/schedule keep their metadata with reflect-metadata as SetMetadata does,
  // above or below: both orders are checked.
  @SetMetadata('schedule', 'every night')
  @LeaderOnly('report:{0}')
  async nightly(day: string) {
    this.runs.ran.push(`${this.instance} ${day} ${currentLock()?.key}`);
    this.runs.entered.resolve();
    await this.runs.open.promise;
    return `${day} done`;
  }

  @LeaderOnly('digest', { atLeastFor: AT_LEAST_MS })
  @SetMetadata('schedule', 'hourly')
  async digest() {
    this.runs.ran.push(`${this.instance} digest`);
    return 'digest done';
  }
}

async function twoInstances(url: string, runs: Runs) {
  const start = (name: string) =>
    startApp(url, {
      providers: [{ provide: Runs, useValue: runs }, { provide: INSTANCE, useValue: name }, Reports],
    });
  const [a, b] = await Promise.all([start('a'), start('b')]);
  return { a: a.get(Reports), b: b.get(Reports) };
}

for (const backend of backendsUnderTest(redis.url)) {
  describe.skipIf(backend.url === null)(`@LeaderOnly across two Nest applications (${backend.name})`, () => {
    const url = backend.url!;

    test('called on both instances at once, the method runs on one; the other resolves to undefined without running it', async () => {
      const runs = new Runs();
      const { a, b } = await twoInstances(url, runs);
      const day = `day-${process.pid}-${Date.now()}`;
      const calls = [a.nightly(day), b.nightly(day)];
      await within(runs.entered.promise, STEP_MS, 'one instance runs the report');
      // The other instance gives up while the first is still inside: skipped, not queued.
      const skipped = await within(Promise.race(calls), STEP_MS, 'the other instance skips');
      expect(skipped).toBeUndefined();
      runs.open.resolve();
      const results = await within(Promise.all(calls), STEP_MS, 'both calls');
      expect(results.filter((r) => r === `${day} done`)).toHaveLength(1);
      expect(results.filter((r) => r === undefined)).toHaveLength(1);
      expect(runs.ran).toHaveLength(1);
      expect(runs.ran[0]).toMatch(new RegExp(`^(a|b) ${day} report:${day}$`));
    });

    test('atLeastFor keeps the key after a short run, so another instance does not run the same tick again', async () => {
      const runs = new Runs();
      const { a, b } = await twoInstances(url, runs);
      const started = performance.now();
      expect(await within(a.digest(), STEP_MS, 'a runs the digest')).toBe('digest done');
      expect(await within(b.digest(), STEP_MS, 'b, just after')).toBeUndefined();
      // Only meaningful if b's call came inside the at-least window.
      expect(performance.now() - started).toBeLessThan(AT_LEAST_MS);
      expect(runs.ran).toEqual(['a digest']);
    });

    test("other decorators' metadata survives @LeaderOnly in either order", () => {
      const get = (method: object) => Reflect.getMetadata('schedule', method) as unknown;
      expect(get(Reports.prototype.nightly)).toBe('every night');
      expect(get(Reports.prototype.digest)).toBe('hourly');
      expect(Reports.prototype.nightly.name).toBe('nightly');
    });
  });
}

describe('@LeaderOnly and a failed backend', () => {
  test('an unreachable backend rejects with a BackendError: a run that could not be coordinated is not reported as skipped', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    // Only when @holdfast/redis is installed, which it is here (a dev dependency): the closed port is what fails.
    await createLockProvider(url).then((p) => p.close());
    const runs = new Runs();
    const app = await startApp(url, { providers: [{ provide: Runs, useValue: runs }, { provide: INSTANCE, useValue: 'a' }, Reports] });
    const error = await rejection(within(app.get(Reports).nightly('monday'), STEP_MS, 'nightly on a closed port'));
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(runs.ran).toEqual([]);
  });
});
