/**
 * Test helpers for adapter tests and the conformance suite: bounded awaits, condition polling, abort
 * signals and error outcomes. Every helper that waits takes a bound and names what it waited for.
 */

export { abortedWithin, abortTime, lostWithin } from './aborted.js';
export { codeOf, elapsed, rejection, type Settled, settle, type Timed, timed } from './outcomes.js';
export { type UntilOptions, until } from './until.js';
export { type What, within } from './within.js';
