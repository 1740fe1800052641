/** Whether `line` was printed within `withinMs` (checked every 20 ms: a child's stdout has no other signal). */
export async function printed(lines: string[], line: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!lines.includes(line)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}
