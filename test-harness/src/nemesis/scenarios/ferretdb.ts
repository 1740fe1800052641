import type { Scenario } from '../types.js';
import { holderCutOff } from './server-clock-leases.js';

/**
 * No clock scenario: the adapter judges leases on the server's time, and FerretDB (Go) reads its clock
 * through the vDSO, out of libfaketime's reach.
 */
export const ferretdbScenarios: Scenario[] = [holderCutOff];
