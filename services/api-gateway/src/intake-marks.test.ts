import { IntakeMarks } from './intake-marks';

/** Records each batch; `hold` keeps a batch in flight until released, like a slow Redis. */
class Marks {
  batches: string[][] = [];
  private release: (() => void)[] = [];
  hold = false;
  markQueued = (...ids: string[]): Promise<void> => {
    this.batches.push(ids);
    if (!this.hold) return Promise.resolve();
    return new Promise<void>((resolve) => this.release.push(resolve));
  };
  releaseAll(): void {
    for (const release of this.release.splice(0)) release();
  }
}

describe('IntakeMarks', () => {
  it('clears the marks of jobs queued close together in one call', async () => {
    const store = new Marks();
    const marks = new IntakeMarks(store);
    marks.clear('a');
    marks.clear('b');
    marks.clear('c');
    expect(store.batches).toEqual([]);
    await marks.flush();
    expect(store.batches).toEqual([['a', 'b', 'c']]);
    await marks.flush();
    expect(store.batches).toHaveLength(1);
  });

  it('sends a batch by itself, and close() waits for batches still under way', async () => {
    const store = new Marks();
    store.hold = true;
    const marks = new IntakeMarks(store);
    marks.clear('x');
    await new Promise<void>((resolve) => {
      const poll = () => (store.batches.length > 0 ? resolve() : setTimeout(poll, 2));
      poll();
    });
    expect(store.batches).toEqual([['x']]);
    marks.clear('y');
    let closed = false;
    const closing = marks.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.batches).toEqual([['x'], ['y']]);
    expect(closed).toBe(false);
    store.releaseAll();
    await closing;
    expect(closed).toBe(true);
    await marks.close();
  });

  it('keeps going when a batch fails: the intake repair covers a mark left behind', async () => {
    const marks = new IntakeMarks({ markQueued: () => Promise.reject(new Error('redis away')) });
    marks.clear('z');
    await expect(marks.flush()).resolves.toBeUndefined();
  });
});
