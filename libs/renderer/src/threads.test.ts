import sharp from 'sharp';
import { limitImageThreads, threadsPerJob } from './threads';

it('shares the CPUs among the jobs that run at once, one thread each at least', () => {
  expect(threadsPerJob(2, 2)).toBe(1);
  expect(threadsPerJob(1, 2)).toBe(2);
  expect(threadsPerJob(2, 16)).toBe(8);
  expect(threadsPerJob(3, 8)).toBe(2);
  expect(threadsPerJob(8, 2)).toBe(1);
  expect(threadsPerJob(0, 4)).toBe(4);
});

it("sets libvips's pool for the process", () => {
  const before = sharp.concurrency();
  try {
    limitImageThreads(1);
    expect(sharp.concurrency()).toBe(1);
  } finally {
    sharp.concurrency(before);
  }
});
