import { sleep } from '@holdfast/core/backend';
import { type Bound, throwIfAborted } from './bounded.js';
import { isSqliteBusy } from './driver-errors.js';

/** How long to keep resending a command that failed with SQLITE_BUSY. */
const BUSY_RETRY_MS = 5_000;

/** Resends a command FerretDB refused with SQLITE_BUSY (rolled back, so nothing was applied). */
export async function whileSqliteBusy<T>(bound: Bound, command: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_RETRY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await command();
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() > deadline) throw error;
      throwIfAborted(bound);
      await sleep(Math.random() * Math.min(3 * 2 ** attempt, 100));
    }
  }
}
