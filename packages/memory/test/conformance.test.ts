import { defineConformanceSuite } from '@holdfast/test-harness';
import { createMemoryProvider, MemoryStore } from '../src/index.js';

// One store shared by every provider instance: the instances stand for processes of one app.
const store = new MemoryStore();

defineConformanceSuite({
  name: 'memory',
  createProvider: () => createMemoryProvider({ store }),
  openWaits: () => store.waitingCalls(),
  faults: { unsupported: 'the memory backend lives in one process: there is no connection to stall, hang or cut' },
  shortTtlMs: 300,
  promptWakeMs: 200,
  slackMs: 500,
});
