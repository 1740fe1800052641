/** Something the bench opens on a server (clients, child processes) and must close. */
export interface Closable {
  close(): Promise<unknown>;
}

/**
 * Opens everything at once; if any fails, closes those that opened (their clients and child
 * processes would otherwise stay on the server for the rest of the run) and rejects with the first failure.
 */
export async function openAll<T extends Closable>(openers: readonly (() => Promise<T>)[]): Promise<T[]> {
  const opened = await Promise.allSettled(openers.map((open) => open()));
  const values = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = opened.find((result) => result.status === 'rejected');
  if (!failed) return values;
  await Promise.allSettled(values.map((value) => value.close()));
  throw failed.reason;
}
