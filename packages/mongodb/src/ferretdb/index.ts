/**
 * The FerretDB protocol: each key's lock states as a chain of immutable version records, changed
 * only by unique inserts (version-chain.ts says why), and the holder lists built on those records
 * (semaphores and read-write locks). The rest of the adapter (mongod's protocol, and what both
 * share) imports from here only.
 */
export { HolderLists } from './holder-lists.js';
export { readWriteUse, semaphoreUse } from './key-use.js';
export type { VersionRecord } from './records.js';
export { holdsIn, KeyHasSlots } from './slot-state.js';
export { whileSqliteBusy } from './sqlite-busy.js';
export type { ChainTiming } from './version-chain.js';
export { VersionedCatalog } from './versioned-catalog.js';
