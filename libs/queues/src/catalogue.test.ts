import { PRIORITY_LIMIT } from 'bullmq';
import { scheduledAttemptId } from '@media/domain';
import { asyncImage, syncImage, video } from '../../domain/src/test-support/jobs';
import { ASYNC_PRIORITY_BAND, generationPriority, generationQueueEntry, jobIds, QUEUE_SCHEDULES } from './catalogue';

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

describe('generation queue entries', () => {
  it("queues a job under its own id, named for its kind, at its band's priority for its rank", () => {
    expect(generationQueueEntry(syncImage, 3)).toEqual({
      name: 'generate-image',
      payload: { jobId: 'img_1' },
      opts: { jobId: jobIds.generation('img_1'), priority: generationPriority({ synchronous: true, rank: 3 }) },
    });
    expect(generationQueueEntry(asyncImage, 3).opts.priority).toBe(generationPriority({ synchronous: false, rank: 3 }));
    expect(generationQueueEntry(video, 1)).toMatchObject({ name: 'generate-video', opts: { priority: generationPriority({ synchronous: false, rank: 1 }) } });
  });
});

describe('delivery ids', () => {
  it('are deterministic per message and automatic attempt, and free of ":" (BullMQ 6 rejects most ids with it)', () => {
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).toBe('msg_abc.3');
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).not.toBe(jobIds.delivery('msg_abc', 4, 'scheduled'));
    expect(jobIds.delivery('msg_abc', 3, 'scheduled', 2)).toBe('msg_abc.3.r2');
    expect(jobIds.delivery('msg_abc', 1, 'manual')).toMatch(/^msg_abc\.manual\.\d+$/);
    // Manual ones are each their own, even many in one millisecond, and never read as a deferral.
    const manual = Array.from({ length: 200 }, () => jobIds.delivery('msg_abc', 1, 'manual'));
    expect(new Set(manual).size).toBe(200);
    for (const id of manual) expect(jobIds.beforeDeferral(id)).toBe(id);
    // A recovery's attempt is known as one, deferred or not; no other attempt is.
    const recovery = jobIds.recoveryDelivery('msg_abc', 'rcv_xyz');
    expect([recovery, jobIds.deferral(recovery, 3)].map(jobIds.isRecoveryDelivery)).toEqual([true, true]);
    expect([manual[0]!, 'msg_abc.3', jobIds.deferral('msg_abc.3', 1)].map(jobIds.isRecoveryDelivery)).toEqual([false, false, false]);
    expect(jobIds.isRecoveryDelivery(jobIds.holdCheck(jobIds.deferral(recovery, 2), 4))).toBe(true);
  });

  it("name a manual request's hold checks after the run they continue, apart from the run that is sending it", () => {
    const request = jobIds.delivery('msg_abc', 2, 'manual');
    const deferred = jobIds.deferral(request, 2);
    // Each run's checks go on from its own id, never onto the other run's.
    const fromRequest = [1, 2, 3].map((n) => jobIds.holdCheck(n === 1 ? request : jobIds.holdCheck(request, n - 1), n));
    expect(fromRequest).toEqual([`${request}.h1`, `${request}.h2`, `${request}.h3`]);
    expect(fromRequest).not.toContain(deferred);
    expect(jobIds.holdCheck(deferred, 1)).toBe(`${deferred}.h1`);
    // Every one of them is recorded under the request, and is deferred as the request.
    for (const id of [...fromRequest, deferred, jobIds.holdCheck(deferred, 5)]) expect(jobIds.beforeDeferral(id)).toBe(request);
    expect(jobIds.deferral(jobIds.holdCheck(deferred, 5), 3)).toBe(`${request}.d3`);
  });

  it("give an automatic attempt's job the name it waits under in the schedule, which turns back into that job", () => {
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).toBe(scheduledAttemptId('msg_abc', 3));
    expect(QUEUE_SCHEDULES['callback-deliveries'](scheduledAttemptId('msg_abc', 3))).toEqual({
      name: 'deliver',
      payload: { messageId: 'msg_abc', attempt: 3, trigger: 'scheduled' },
    });
    // A requeued attempt is a job of its own, never a schedule entry.
    expect(QUEUE_SCHEDULES['callback-deliveries'](jobIds.delivery('msg_abc', 3, 'scheduled', 1))).toBeUndefined();
  });
});
