import { PRIORITY_LIMIT } from 'bullmq';
import { ASYNC_PRIORITY_BAND, generationPriority } from './queues';

describe('generationPriority', () => {
  const sync = (rank: number) => generationPriority({ synchronous: true, rank });
  const async = (rank: number) => generationPriority({ synchronous: false, rank });

  it("ranks each band by the job's place among its workspace's unfinished jobs (lower runs sooner)", () => {
    expect(sync(1)).toBe(1);
    expect(sync(2)).toBe(2);
    expect(async(1)).toBe(ASYNC_PRIORITY_BAND + 1);
    expect(async(600)).toBe(ASYNC_PRIORITY_BAND + 600);
    // Every workspace's first job before anyone's second, in both bands.
    expect(sync(1)).toBeLessThan(sync(2));
    expect(async(1)).toBeLessThan(async(2));
  });

  it('puts every synchronous call ahead of every asynchronous job, whatever their ranks', () => {
    for (const rank of [1, 1_000, ASYNC_PRIORITY_BAND, 10 * ASYNC_PRIORITY_BAND]) expect(sync(rank)).toBeLessThan(async(1));
  });

  it("stays within BullMQ's range (1..PRIORITY_LIMIT, integers; 0 would mean the unprioritized wait list)", () => {
    for (const rank of [0, -3, 0.5, 1.7, Number.NaN, 10 ** 9]) {
      for (const priority of [sync(rank), async(rank)]) {
        expect(Number.isInteger(priority)).toBe(true);
        expect(priority).toBeGreaterThanOrEqual(1);
        expect(priority).toBeLessThanOrEqual(PRIORITY_LIMIT);
      }
    }
    expect(async(10 ** 9)).toBe(PRIORITY_LIMIT);
    expect(sync(10 ** 9)).toBe(ASYNC_PRIORITY_BAND);
  });
});
