import { expect, test } from 'vitest';
import { ErrorCode, parseDuration } from '../src/index.js';

test.each([
  ['500ms', 500],
  ['15s', 15_000],
  ['2m', 120_000],
  ['1h', 3_600_000],
  ['1.5s', 1500],
  ['250', 250],
  ['1m30s', 90_000],
  ['1h2m3s4ms', 3_723_004],
  ['2d', 172_800_000],
  ['1500us', 2],
  ['0s', 0],
])('parseDuration(%s) = %d', (text, ms) => expect(parseDuration(text)).toBe(ms));

test.each(['', 'soon', '-1s', '5 minutes', '1y', 's', '1m 30s', '1m30', 'ms', '1e3s'])(
  'parseDuration(%j) is an invalid argument',
  (text) => {
    expect(() => parseDuration(text)).toThrow(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
  },
);
