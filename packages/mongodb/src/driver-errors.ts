import { MongoNetworkError, MongoServerError } from 'mongodb';

function codeOf(error: unknown): number | undefined {
  return error instanceof MongoServerError ? (error.code as number | undefined) : undefined;
}

/** E11000: an upsert lost to a document that did not match its filter (grabLock: busy). */
export function isDuplicateKey(error: unknown): boolean {
  return codeOf(error) === 11000;
}

/**
 * The command may or may not have been applied (the connection broke mid-way). A server-selection
 * timeout is not one of these: nothing was sent, so the lock state is known to be unchanged.
 */
export function isNetworkError(error: unknown): boolean {
  return error instanceof MongoNetworkError;
}

/** Change streams are unavailable: FerretDB (238 NotImplemented), a standalone mongod (40573). */
export function isChangeStreamUnsupported(error: unknown): boolean {
  const code = codeOf(error);
  return code === 238 || code === 40573 || code === 115;
}

/**
 * FerretDB's SQLite backend under concurrent writes: "database is locked (5) (SQLITE_BUSY)", as an
 * InternalError. The failed SQLite transaction was rolled back, so the command can be sent again.
 */
export function isSqliteBusy(error: unknown): boolean {
  return error instanceof MongoServerError && /SQLITE_BUSY|database is locked/.test(error.message);
}
