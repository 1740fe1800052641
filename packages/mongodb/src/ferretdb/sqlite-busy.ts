import { MongoServerError } from 'mongodb';
import { type Bound, throwIfAborted } from '../bounded.js';
import { backoff } from './backoff.js';

/** How long to keep resending a command that failed with SQLITE_BUSY. */
const BUSY_RETRY_MS = 5_000;

/**
 * FerretDB's SQLite backend under concurrent writes: "database is locked (5) (SQLITE_BUSY)", as an
 * InternalError. The failed SQLite transaction was rolled back, so the command can be sent again.
 */
function isSqliteBusy(error: unknown): boolean {
  return error instanceof MongoServerError && /SQLITE_BUSY|database is locked/.test(error.message);
}

/** Resends a command FerretDB refused with SQLITE_BUSY (rolled back, so nothing was applied). */
export async function whileSqliteBusy<T>(bound: Bound, command: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await command();
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() > deadline) throw error;
      throwIfAborted(bound);
      await backoff(attempt);
    }
  }
}
