import { ErrorCode, InvalidArgumentError } from '@holdfast/core';
import { codeOf } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { compileKeyTemplate } from '../src/key-template.js';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('key templates', () => {
  test('{N} is argument N, {N.a.b} a path into it; the rest is literal, other braces included', () => {
    expect(compileKeyTemplate('order:{0}')([42])).toBe('order:42');
    expect(compileKeyTemplate('order:{0.id}')([{ id: 'a-1' }])).toBe('order:a-1');
    expect(compileKeyTemplate('{1.user.name}/{0}')([7n, { user: { name: 'ada' } }])).toBe('ada/7');
    expect(compileKeyTemplate('{tag}:{0.items.1}')([{ items: ['x', 'y'] }])).toBe('{tag}:y');
    expect(compileKeyTemplate('flag:{0}')([false])).toBe('flag:false');
    expect(compileKeyTemplate('static')([])).toBe('static');
  });

  test('a missing argument or path is a typed InvalidArgumentError, never a key reading "undefined"', () => {
    const cases: [string, unknown[], RegExp][] = [
      ['order:{0.id}', [{}], /argument 0\.id is undefined/],
      ['order:{0.id}', [null], /argument 0 is null/],
      ['order:{1}', ['only one'], /got 1 argument/],
      ['user:{1.user.name}', [1, { user: null }], /argument 1\.user is null/],
      ['order:{0}', [{ id: 1 }], /is an object, expected a string/],
      ['order:{0}', [['a']], /is an array/],
      ['order:{0}', [''], /empty string/],
      ['order:{0}', [Number.NaN], /is NaN/],
    ];
    for (const [template, args, message] of cases) {
      const error = thrown(() => compileKeyTemplate(template)(args));
      expect(error, `${template} with ${JSON.stringify(args)}`).toBeInstanceOf(InvalidArgumentError);
      expect(codeOf(error)).toBe(ErrorCode.InvalidArgument);
      expect((error as Error).message).toMatch(message);
    }
  });

  test('a key function gets the arguments; anything but a non-empty string from it is refused', () => {
    const build = compileKeyTemplate((order: { id: number }, region: string) => `order:${region}:${order.id}`);
    expect(build([{ id: 3 }, 'eu'])).toBe('order:eu:3');
    expect(codeOf(thrown(() => compileKeyTemplate(() => undefined as unknown as string)([])))).toBe(ErrorCode.InvalidArgument);
    expect(codeOf(thrown(() => compileKeyTemplate(() => '')([])))).toBe(ErrorCode.InvalidArgument);
  });

  test('an empty or non-string template is refused when the decorator is applied', () => {
    expect(codeOf(thrown(() => compileKeyTemplate('')))).toBe(ErrorCode.InvalidArgument);
    expect(codeOf(thrown(() => compileKeyTemplate(42 as unknown as string)))).toBe(ErrorCode.InvalidArgument);
  });
});
