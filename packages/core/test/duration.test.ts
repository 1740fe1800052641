import { expect, test } from 'vitest';
import { ErrorCode, parseDuration } from '../src/index.js';

test.each([
  ['500ms', 500],
  ['15s', 15_000],
  ['2m', 120_000],
  ['1h', 3_600_000],
  ['1.5s', 1500],
  ['250', 250],
])('parseDuration(%s) = %d', (text, ms) => expect(parseDuration(text)).toBe(ms));

test.each(['', 'soon', '-1s', '5 minutes', '1d', 's'])('parseDuration(%j) is an invalid argument', (text) => {
  expect(() => parseDuration(text)).toThrow(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
});
