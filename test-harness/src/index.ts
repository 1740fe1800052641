export { defineConformanceSuite, FencedResource } from './conformance/index.js';
export type { ConformanceTarget } from './conformance/index.js';
