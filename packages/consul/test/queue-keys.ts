/** Raw KV: the entries of Holdfast's wait queue for `key` of `prefix` (queue.ts), whatever their state. */
export async function queueKeys(http: string, prefix: string, key: string): Promise<string[]> {
  // The key is stored percent-encoded as one segment; the URL encodes it once more.
  const dir = `${prefix}.queue/${encodeURIComponent(encodeURIComponent(key))}/`;
  const response = await fetch(`${http}/v1/kv/${dir}?keys`, { signal: AbortSignal.timeout(2000) });
  return response.status === 404 ? [] : ((await response.json()) as string[]);
}
