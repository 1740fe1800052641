import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../src/helpers/index.js';
import { FakeClock } from '../src/nemesis/clock.js';
import { NetworkRig } from '../src/nemesis/network.js';
import { runIn } from '../src/nemesis/targets/in-namespace.js';
import { postgresTarget } from '../src/nemesis/targets/postgres.js';
import { postgresBinDir } from '../src/servers/binaries.js';

describe('PostgreSQL in a namespace, under the fake clock', () => {
  const rig = NetworkRig.create(['db', 'c0']);
  const clock = new FakeClock();
  const target = postgresTarget();
  afterAll(async () => {
    await target.stop();
    rig.destroy();
    clock.remove();
  });

  it('answers a client host over the rig, and its clock_timestamp() follows a jump (expiry runs on it)', async () => {
    await target.start(rig, new Map([['db', clock]]));
    const psql = join((await postgresBinDir())!, 'psql');
    const skewMs = async (): Promise<number> => {
      const { code, stdout } = await runIn(rig, 'c0', psql, [
        target.urlFor(0),
        '-Atc',
        'select extract(epoch from clock_timestamp()) * 1000',
      ]);
      if (code !== 0) throw new Error(`psql exited with ${code}`);
      return Number(stdout.trim()) - Date.now();
    };
    expect(Math.abs(await skewMs())).toBeLessThan(1000);
    clock.jump(3_600_000);
    await until(async () => Math.abs((await skewMs()) - 3_600_000) < 1000, 10_000, 'PostgreSQL to see its clock an hour ahead', {
      everyMs: 250,
    });
    clock.jump(-3_700_000);
    await until(async () => Math.abs((await skewMs()) + 100_000) < 1000, 10_000, 'PostgreSQL to see its clock 100 s behind', {
      everyMs: 250,
    });
  });
});
