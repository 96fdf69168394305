// What the isolation tests share: a workspace's run of callbacks timed from submission to the
// receiver's answer, and how its latency is read.
import { callbackIdFor } from '@media/domain';
import { CallbackRepository } from '@media/callbacks';
import { api, eventually, type TestStack, type TestWorkspace } from '../support/stack';
import type { TestReceiver } from '../dispatcher/support/receiver';

/** An async image whose callback goes to `url`; when it was submitted. */
export async function submitImage(stack: TestStack, workspace: TestWorkspace, url: string): Promise<{ id: string; submittedMs: number }> {
  const submittedMs = Date.now();
  const res = await api(stack, workspace.apiKey)('/v1/images/generations', {
    method: 'POST',
    json: { model: 'pixel-1', prompt: 'a small red boat', size: '256x256', callback_url: url },
  });
  if (res.status !== 202) throw new Error(`creation answered ${res.status}: ${res.text}`);
  return { id: res.json.id as string, submittedMs };
}

/** `count` async images submitted at once whose callbacks go to `path` of `receiver`: submission → the receiver's answer, per callback, in ms. */
export async function timedRun(stack: TestStack, workspace: TestWorkspace, receiver: TestReceiver, path: string, count: number): Promise<number[]> {
  const sent = await Promise.all(Array.from({ length: count }, () => submitImage(stack, workspace, receiver.url(path))));
  return Promise.all(
    sent.map(async ({ id, submittedMs }) => {
      const messageId = callbackIdFor(id, 'image.completed');
      const got = await eventually(
        () => receiver.requestsTo(path).find((r) => r.headers['webhook-id'] === messageId && r.answeredMs),
        30_000,
        `the callback of ${id}`,
      );
      return got.answeredMs! - submittedMs;
    }),
  );
}

/** The 99th percentile (nearest rank). */
export const p99 = (values: number[]) => [...values].sort((x, y) => x - y)[Math.ceil(values.length * 0.99) - 1]!;

/** How much later than its baseline a workspace's p99 may be while another workspace's callbacks hang: twice it, or a second more. */
export const isolationBound = (baseline: number[]) => Math.max(2 * p99(baseline), p99(baseline) + 1_000);

/**
 * Waits for each callback (its `msg_` id) to end `failed` after six attempts that all failed with
 * `error`, ladder gaps of 1 s; returns, per callback, the latest any of its attempts was made after
 * the ladder made it due (ms): how late isolation made it.
 */
export async function sixFailedAttempts(stack: TestStack, messageIds: string[], error: string, timeoutMs: number): Promise<number[]> {
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
    expect(attempts.map((x) => x.error)).toEqual(Array(6).fill(error));
    lateness.push(
      Math.max(...attempts.map((x, i) => x.sent_ms - (i === 0 ? ended.event_ms : attempts[i - 1]!.sent_ms + attempts[i - 1]!.duration_ms + 1_000))),
    );
  }
  return lateness;
}
