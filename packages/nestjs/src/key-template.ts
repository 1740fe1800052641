import { InvalidArgumentError } from '@holdfast/core';

/** A key for a decorated method: a template such as 'order:{0.id}', or a function of the method's arguments. */
export type KeyTemplate = string | ((...args: never[]) => string);

/** `{N}` or `{N.path.to.value}`: argument N, then properties. Other braces are literal (Redis hash tags stay usable). */
const PLACEHOLDER = /\{(\d+)((?:\.[A-Za-z0-9_$]+)*)\}/g;

type Part = string | { readonly index: number; readonly path: readonly string[]; readonly text: string };

/**
 * Compiles a key template once, when the decorator is applied, into a function of the method's
 * arguments. A placeholder whose value is missing, or is no string, number, bigint or boolean, is an
 * InvalidArgumentError at the call: a key must never read "order:undefined" or "[object Object]",
 * which would make unrelated calls share one lock.
 */
export function compileKeyTemplate(template: KeyTemplate): (args: readonly unknown[]) => string {
  if (typeof template === 'function') return (args) => keyFromFunction(template as (...args: unknown[]) => unknown, args);
  if (typeof template !== 'string' || template.length === 0) {
    throw new InvalidArgumentError('key', 'expected a non-empty template such as "order:{0.id}", or a function of the arguments');
  }
  const parts: Part[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match.index > last) parts.push(template.slice(last, match.index));
    parts.push({ index: Number(match[1]), path: match[2] ? match[2].slice(1).split('.') : [], text: match[0] });
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));
  return (args) => parts.map((part) => (typeof part === 'string' ? part : placeholderValue(part, args, template))).join('');
}

function placeholderValue(part: Exclude<Part, string>, args: readonly unknown[], template: string): string {
  let value: unknown = args[part.index];
  let reached = `argument ${part.index}`;
  if (part.index >= args.length) throw missing(template, part.text, `the method got ${args.length} argument(s)`);
  for (const name of part.path) {
    if (value === null || value === undefined) break;
    value = (value as Record<string, unknown>)[name];
    reached += `.${name}`;
  }
  if (value === null || value === undefined) throw missing(template, part.text, `${reached} is ${String(value)}`);
  if (typeof value === 'string') {
    if (value.length === 0) throw missing(template, part.text, `${reached} is an empty string`);
    return value;
  }
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  throw missing(template, part.text, `${reached} is ${describe(value)}, expected a string, number, bigint or boolean`);
}

function keyFromFunction(build: (...args: unknown[]) => unknown, args: readonly unknown[]): string {
  const key = build(...args);
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidArgumentError('key', `the key function returned ${describe(key)}, expected a non-empty string`);
  return key;
}

function missing(template: string, placeholder: string, why: string): InvalidArgumentError {
  return new InvalidArgumentError('key', `"${template}": ${placeholder} has no value (${why})`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `"${value}"`;
  if (typeof value === 'number') return String(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
