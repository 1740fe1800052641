import { resolveBackend } from '../servers/resolve.js';
import type { BackendKind } from '../servers/types.js';

export interface BenchServer {
  readonly url: string;
  /** What is behind the URL, e.g. "local FerretDB 1.24.2"; "HOLDFAST_BENCH_* URL" when given. */
  readonly label: string;
  /** Stops the server if the bench started it; a server given by URL is left alone. */
  stop(): Promise<void>;
}

/**
 * The server a backend's bench runs on: `HOLDFAST_BENCH_<KIND>_URL`, else whatever the test tooling
 * finds or starts (a container or a local binary). Throws with the reason when there is none.
 */
export async function benchServer(kind: BackendKind): Promise<BenchServer> {
  const fromEnv = process.env[`HOLDFAST_BENCH_${kind.toUpperCase()}_URL`]?.trim();
  if (fromEnv) return { url: fromEnv, label: `HOLDFAST_BENCH_${kind.toUpperCase()}_URL`, stop: async () => undefined };
  const resolved = await resolveBackend(kind);
  if (resolved.url === null) throw new Error(resolved.skipReason);
  return { url: resolved.url, label: resolved.server, stop: () => resolved.stop() };
}
