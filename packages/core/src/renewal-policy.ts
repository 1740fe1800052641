/**
 * When to renew and when to give up, shared by every per-lock-renewed backend.
 * Renew after a third of the lease; if no renewal has succeeded by the safety deadline (a tenth of
 * the lease before local expiry) the holder must assume the lock is lost.
 */
export function renewAt(leaseStart: number, ttlMs: number): number {
  return leaseStart + ttlMs / 3;
}

export function safetyDeadline(leaseStart: number, ttlMs: number): number {
  return leaseStart + ttlMs - safetyMargin(ttlMs);
}

export function safetyMargin(ttlMs: number): number {
  return Math.max(ttlMs / 10, 5);
}

/** Pause between failed renewal attempts (the Go Consul client uses 1 s). */
export function retryDelay(ttlMs: number): number {
  return Math.min(1000, Math.max(ttlMs / 10, 10));
}
