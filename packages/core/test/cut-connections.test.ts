import { describe, expect, test, vi } from 'vitest';
import { CutConnections } from '../src/cut-connections.js';

describe('CutConnections: an undo waits until the server has ended the connections cut mid-statement', () => {
  test('settled() resolves once every cut id has left the server, asking only for those not yet gone', async () => {
    const cut = new CutConnections();
    cut.add(7);
    cut.add(9);
    cut.add(null);
    const asked: number[][] = [];
    let rounds = 0;
    await cut.settled(async (ids) => {
      asked.push([...ids]);
      rounds++;
      // 9 ends at once, 7 after three looks.
      return rounds < 3 ? [7] : [];
    }, AbortSignal.timeout(2000));
    expect(asked).toEqual([[7, 9], [7], [7]]);
    let askedAgain = false;
    await cut.settled(async () => {
      askedAgain = true;
      return [];
    }, AbortSignal.timeout(2000));
    expect(askedAgain, 'ids seen gone were asked about again').toBe(false);
  });

  test('settled() is bounded by its signal while a cut connection keeps running', async () => {
    const cut = new CutConnections();
    cut.add(1);
    const stillRunning = async (ids: readonly number[]) => ids;
    await expect(cut.settled(stillRunning, AbortSignal.timeout(100))).rejects.toThrow();
  });

  test('an id still running 30 s after its cut is forgotten, also when settled() is never called', async () => {
    vi.useFakeTimers({ now: 0 });
    try {
      const cut = new CutConnections();
      cut.add(1);
      vi.setSystemTime(30_001);
      cut.add(2);
      const asked: number[][] = [];
      await cut.settled(async (ids) => {
        asked.push([...ids]);
        return [];
      }, new AbortController().signal);
      expect(asked, 'the old id was still waited for').toEqual([[2]]);
    } finally {
      vi.useRealTimers();
    }
  });
});
