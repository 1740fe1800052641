import { createLockProvider } from '@holdfast/core';
import { handoff, holdMany, uncontended } from './procedures.js';
import type { BenchModule } from './types.js';

export const memoryBench: BenchModule = {
  name: 'memory',
  async run() {
    const create = () => createLockProvider('memory://bench');
    return [
      await uncontended('holdfast memory', create),
      ...(await handoff('holdfast memory', create, 500)),
      ...(await holdMany('holdfast memory', create, { ttlMs: 1500, windowMs: 3000 })),
    ];
  },
};
