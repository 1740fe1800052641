export type { ConformanceTarget, SuiteOptions } from './conformance/index.js';
export { defineConformanceSuite, FencedResource } from './conformance/index.js';
