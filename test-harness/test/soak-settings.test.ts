import { describe, expect, it } from 'vitest';
import { parseSoakArgs } from '../src/soak/settings.js';

describe('npm run soak arguments', () => {
  it('takes the Redis topologies as targets, with one server’s windows', () => {
    for (const target of ['redis-quorum', 'redis-cluster', 'redis-sentinel']) {
      const settings = parseSoakArgs([target]);
      expect(settings).toMatchObject({ backend: target, ttlMs: 1000, pauseMs: [1200, 3000], pauseEveryMs: 600, holdMs: 0 });
    }
  });

  it('holds each turn for --hold-ms, and refuses a hold that is not a positive integer', () => {
    expect(parseSoakArgs(['mongodb', '--mode', 'multi-key', '--hold-ms', '400'])).toMatchObject({ mode: 'multi-key', holdMs: 400 });
    expect(() => parseSoakArgs(['redis', '--hold-ms', '-1'])).toThrow(/--hold-ms must be a positive integer/);
  });

  it('refuses an unknown target with the usage, and skips memory with the reason', () => {
    expect(() => parseSoakArgs(['redis-replica'])).toThrow(/usage: npm run soak -- <redis\|redis-quorum\|redis-cluster\|redis-sentinel\|/);
    expect(parseSoakArgs(['memory'])).toEqual({ skip: 'the memory backend is not shared between processes: nothing to soak' });
  });
});
