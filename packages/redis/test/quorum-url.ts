/** `redis://h1:p1?quorum=h2:p2,h3:p3` from single-node URLs such as startRedisSet() returns. */
export function quorumUrl(urls: readonly string[]): string {
  const [first, ...others] = urls.map((url) => new URL(url).host);
  return `redis://${first}?quorum=${others.join(',')}`;
}
