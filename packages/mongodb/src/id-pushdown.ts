import type { Collection, Filter, FindOneAndUpdateOptions, UpdateFilter } from 'mongodb';
import type { LockDocument } from './documents.js';

type Condition = Filter<LockDocument>;

/**
 * FerretDB v1 pushes a filter down to SQLite only when it is exactly `{_id: value}`; anything else
 * (`{_id, state: 0}`) scans and decodes the whole collection, so each grab costs O(locks). Under the
 * mutation latch nobody else writes the document, so the same findAndModify can be run as: read by
 * `_id`, evaluate MongoDB's filter here, write by `_id`. The filters of the lock protocol use only
 * field equality and `$or`, which is all this evaluates.
 */
export async function findAndModifyById(
  locks: Collection<LockDocument>,
  key: string,
  filter: Condition,
  update: UpdateFilter<LockDocument>,
  options: FindOneAndUpdateOptions & { returnDocument: 'before' | 'after' },
): Promise<LockDocument | null> {
  const current = await locks.findOne({ _id: key });
  if (current ? !matches(current, filter) : !options.upsert) return null;
  // An upsert whose filter missed an existing document is MongoDB's E11000: busy, here null.
  if (!current && !matchesMissing(filter)) return null;
  return locks.findOneAndUpdate({ _id: key }, update, options);
}

function matches(doc: LockDocument, filter: Condition): boolean {
  return Object.entries(filter).every(([field, expected]) => {
    if (field === '$or') return (expected as Condition[]).some((branch) => matches(doc, branch));
    return same((doc as unknown as Record<string, unknown>)[field], expected);
  });
}

/** grabLock's `{_id, state: 0}` against no document: the upsert inserts. */
function matchesMissing(filter: Condition): boolean {
  return Object.keys(filter).every((field) => field === '_id' || field === 'state');
}

function same(actual: unknown, expected: unknown): boolean {
  if (expected !== null && typeof expected === 'object' && 'equals' in expected) {
    return (expected as { equals(other: unknown): boolean }).equals(actual);
  }
  return actual === expected;
}
