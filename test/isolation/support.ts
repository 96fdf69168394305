// What the isolation tests share: a workspace's run of callbacks timed from its jobs' end to the
// receiver's answer, a control run beside it, and how their latency is read.
import { createLogger } from '@media/common';
import { JobQueue } from '@media/queues';
import { CallbackRepository } from '@media/callbacks';
import { eventually, type TestStack, type TestWorkspace } from '../support/stack';
import { announceFinishedImage } from '../dispatcher/support/finished-job';
import type { TestReceiver } from '../dispatcher/support/receiver';

/** The stack's job-events queue, on which the tests announce finished jobs as the generator does. */
export const jobEvents = (stack: TestStack) => new JobQueue('job-events', stack.redis, stack.prefix, createLogger('test', 'error'));

/**
 * `count` finished image jobs of `workspace` whose callbacks go to `path` of `receiver`, announced at
 * once as the generator announces them: job end → the receiver's answer, per callback, in ms. How
 * fast images are made is not what these tests measure, so no generator renders them.
 */
export async function finishedRun(
  stack: TestStack,
  events: JobQueue<'job-events'>,
  workspace: TestWorkspace,
  receiver: TestReceiver,
  path: string,
  count: number,
): Promise<number[]> {
  const sent = await Promise.all(Array.from({ length: count }, () => announceFinishedImage(stack, events, workspace.workspaceId, receiver.url(path))));
  return Promise.all(
    sent.map(async ({ messageId, finishedMs }) => {
      const got = await eventually(
        () => receiver.requestsTo(path).find((r) => r.headers['webhook-id'] === messageId && r.answeredMs),
        30_000,
        `delivery of ${messageId}`,
      );
      return got.answeredMs! - finishedMs;
    }),
  );
}

/**
 * The run being judged and a control run at the same moment: the same callbacks sent where the
 * other workspace's trouble cannot reach them. Both meet whatever else the machine is doing then (a
 * busy machine slows both alike), so the control, not only a baseline taken before, says what
 * "as fast as without the trouble" means at that moment.
 */
export async function besideControl(judged: () => Promise<number[]>, control: () => Promise<number[]>): Promise<{ judged: number[]; control: number[] }> {
  const [j, c] = await Promise.all([judged(), control()]);
  return { judged: j, control: c };
}

/** The 99th percentile (nearest rank). */
export const p99 = (values: number[]) => [...values].sort((x, y) => x - y)[Math.ceil(values.length * 0.99) - 1]!;

/**
 * How much later than the runs it is compared with (the baseline before the trouble, and the control
 * beside the judged run) a workspace's p99 may be while another workspace's callbacks hang: twice
 * the slower of them, or a second more.
 */
export const isolationBound = (...references: number[][]) => {
  const reference = Math.max(...references.map(p99));
  return Math.max(2 * reference, reference + 1_000);
};

/**
 * Waits for each callback (its `msg_` id) to end `failed` after six attempts that each failed with
 * one of `errors`, ladder gaps of 1 s; returns, per callback, the latest any of its attempts was made
 * after the ladder made it due (ms): how late isolation made it.
 */
export async function sixFailedAttempts(stack: TestStack, messageIds: string[], errors: readonly string[], timeoutMs: number): Promise<number[]> {
  const callbacks = new CallbackRepository(stack.redis, stack.keys);
  const lateness: number[] = [];
  for (const messageId of messageIds) {
    const ended = await eventually(
      async () => {
        const cb = await callbacks.get(messageId);
        return cb?.state === 'failed' ? cb : undefined;
      },
      timeoutMs,
      `${messageId} to fail`,
    );
    expect(ended.ladder_attempt).toBe(6);
    const attempts = await callbacks.attempts(messageId);
    expect(attempts.filter((x) => !errors.includes(x.error ?? 'delivered'))).toEqual([]);
    expect(attempts).toHaveLength(6);
    lateness.push(
      Math.max(...attempts.map((x, i) => x.sent_ms - (i === 0 ? ended.event_ms : attempts[i - 1]!.sent_ms + attempts[i - 1]!.duration_ms + 1_000))),
    );
  }
  return lateness;
}
