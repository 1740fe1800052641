import { BACKEND_KINDS, type BackendKind } from './types.js';

/**
 * HOLDFAST_REQUIRE_BACKENDS=all (or a comma list such as `redis,consul`): those backends must be
 * available; tests that would skip fail instead. CI sets it so a missing server cannot pass silently.
 */
export function requiredBackends(env: NodeJS.ProcessEnv = process.env): Set<BackendKind> {
  const raw = (env['HOLDFAST_REQUIRE_BACKENDS'] ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'none' || raw === '0') return new Set();
  if (raw === 'all' || raw === '1' || raw === 'true') return new Set(BACKEND_KINDS);
  const kinds = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const k of kinds) {
    if (!(BACKEND_KINDS as readonly string[]).includes(k)) {
      throw new Error(`HOLDFAST_REQUIRE_BACKENDS: unknown backend "${k}" (known: ${BACKEND_KINDS.join(', ')}, all)`);
    }
  }
  return new Set(kinds as BackendKind[]);
}

export function isRequired(kind: BackendKind): boolean {
  return requiredBackends().has(kind);
}
