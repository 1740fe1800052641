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
