import { type Attributes, type Context, context, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { ATTRIBUTES, SPAN_NAMES } from './names.js';

interface OpenAcquire {
  readonly span: Span;
  /** The caller's context when it called acquire: the hold that follows is its child too. */
  readonly parent: Context;
}

/**
 * The spans still open: acquires by core's `acquireId`, holds by the lock's `lockId`. Each is
 * removed at its end event, so a lock whose events all arrived leaves nothing here.
 */
export class LockSpans {
  private readonly acquires = new Map<number, OpenAcquire>();
  private readonly holds = new Map<string, Span>();

  constructor(private readonly tracer: Tracer) {}

  /** Published synchronously inside the caller's acquire(): the active context is the caller's. */
  startAcquire(acquireId: unknown, attributes: Attributes): void {
    if (typeof acquireId !== 'number') return;
    const parent = context.active();
    this.acquires.set(acquireId, { span: this.tracer.startSpan(SPAN_NAMES.acquire, { attributes }, parent), parent });
  }

  acquireEvent(acquireId: unknown, name: string): void {
    if (typeof acquireId === 'number') this.acquires.get(acquireId)?.span.addEvent(name);
  }

  endAcquire(acquireId: unknown, attributes: Attributes, error: unknown): void {
    if (typeof acquireId !== 'number') return;
    const open = this.acquires.get(acquireId);
    if (!open) return;
    this.acquires.delete(acquireId);
    open.span.setAttributes(attributes);
    if (error instanceof Error && attributes[ATTRIBUTES.acquireOutcome] === 'error') {
      open.span.recordException(error);
      open.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    open.span.end();
  }

  /** The hold starts beside its acquire (same parent), linked to it. */
  startHold(acquireId: unknown, lockId: unknown, attributes: Attributes): void {
    if (typeof lockId !== 'string') return;
    const open = typeof acquireId === 'number' ? this.acquires.get(acquireId) : undefined;
    const links = open ? [{ context: open.span.spanContext() }] : [];
    const span = this.tracer.startSpan(SPAN_NAMES.hold, { attributes, links }, open?.parent ?? context.active());
    this.holds.set(lockId, span);
  }

  holdEvent(lockId: unknown, name: string, attributes?: Attributes): void {
    if (typeof lockId === 'string') this.holds.get(lockId)?.addEvent(name, attributes);
  }

  endHold(lockId: unknown, attributes: Attributes, lossDetail: string | undefined): void {
    if (typeof lockId !== 'string') return;
    const span = this.holds.get(lockId);
    if (!span) return;
    this.holds.delete(lockId);
    span.setAttributes(attributes);
    // A lost lock is the failure a holder must hear of; a release or a hand-off ends it normally.
    if (lossDetail !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: lossDetail });
    span.end();
  }

  /** How many spans are open (tests: nothing is left behind). */
  get openCount(): number {
    return this.acquires.size + this.holds.size;
  }

  clear(): void {
    this.acquires.clear();
    this.holds.clear();
  }
}
