import { BackendNeverAnsweredError } from '@holdfast/core';

/**
 * The line the CLI prints for an error that ended a command: the library's own message, except where
 * its advice names a library option that the CLI spells as a flag.
 */
export function failureText(error: unknown): string {
  if (error instanceof BackendNeverAnsweredError) {
    return `${error.backend} backend failed: it has never answered (${error.failure}); check the backend URL, or pass --wait-for-backend to wait for it to come up`;
  }
  return error instanceof Error ? error.message : String(error);
}
