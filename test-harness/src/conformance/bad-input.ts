/** Keys every provider must reject with an InvalidArgumentError, built around a valid key. */
export function BAD_KEYS(base: string): [string, string][] {
  return [
    ['an empty "/" segment', `${base}//x`],
    ['a leading "/"', `/${base}`],
    ['a trailing "/"', `${base}/`],
    ['a ".." segment', `${base}/../x`],
    ['a "." segment', `${base}/./x`],
    ['a newline', `${base}\n`],
    ['a NUL', `${base}\u0000x`],
    ['DEL', `${base}\u007f`],
    ['the C1 control U+0080', `${base}\u0080`],
    ['the C1 control U+0085 (next line)', `${base}\u0085x`],
    ['the C1 control U+009F', `${base}\u009f`],
    ['a lone high surrogate', `${base}\ud800`],
    ['a lone low surrogate', `${base}\udc00x`],
  ];
}
