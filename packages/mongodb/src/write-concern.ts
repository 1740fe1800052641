/** MongoDB's distlock writes with write concern majority, wtimeout 15 s. */
export const MAJORITY = { writeConcern: { w: 'majority' as const, wtimeoutMS: 15_000 } };
