import { BackendError, HoldfastError } from './errors.js';

/** Adapters may throw anything; callers always see a HoldfastError, a BackendError if in doubt. */
export function toBackendError(backend: string, operation: string, error: unknown): HoldfastError {
  if (error instanceof HoldfastError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError(backend, `${operation}: ${message}`, error);
}
