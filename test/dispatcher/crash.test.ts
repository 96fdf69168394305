import { eventually } from '../support/stack';
import { DispatcherHarness } from './support/harness';

/**
 * At least once across crashes: the dispatcher is SIGKILLed while one attempt is in flight and
 * other callbacks sit between ladder steps, then started again. Nothing is lost, nothing is
 * counted twice, and every repeat carries the callback's one webhook-id.
 */
let h: DispatcherHarness;

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '300ms,600ms,900ms,1200ms,1500ms', WEBHOOK_TIMEOUT_MS: '10000' });
});

afterAll(async () => {
  await h?.stop();
});

it('loses no callback and double-counts no attempt when the dispatcher is killed mid-delivery and restarted', async () => {
  h.receiver.script('/hang-once', (n) => (n === 1 ? 'hang' : { status: 200 }));
  for (const path of ['/flaky-a', '/flaky-b', '/flaky-c']) h.receiver.script(path, (n) => (n <= 2 ? { status: 503 } : { status: 200 }));
  h.receiver.script('/always', () => ({ status: 500 }));

  const jobs: Record<string, string> = {};
  for (const path of ['/hang-once', '/flaky-a', '/flaky-b', '/flaky-c', '/always']) jobs[path] = await h.jobs.image(h.receiver.url(path), `crash ${path}`);
  const ids: Record<string, string> = {};
  for (const [path, jobId] of Object.entries(jobs)) ids[path] = await h.messageIdOf(jobId);

  // Mid-delivery for one, mid-ladder for the others.
  await h.attempts(ids['/flaky-a'], 1);
  await h.attempts(ids['/flaky-b'], 1);
  await h.attempts(ids['/flaky-c'], 1);
  await h.attempts(ids['/always'], 1);
  await eventually(() => (h.receiver.requestsTo('/hang-once').length === 1 ? true : undefined), 10_000, 'hanging delivery');
  await h.stack.service('webhook-dispatcher').kill('SIGKILL');

  // A job that ends while no dispatcher runs waits in the durable job-events queue.
  jobs['/while-down'] = await h.jobs.image(h.receiver.url('/while-down'), 'finished while the dispatcher is down');
  ids['/while-down'] = await h.messageIdOf(jobs['/while-down']);

  await h.stack.startService('webhook-dispatcher');

  for (const path of ['/hang-once', '/flaky-a', '/flaky-b', '/flaky-c', '/while-down']) {
    const { callback, attempts } = await h.settled(ids[path], ['delivered'], 30_000);
    const ladder = attempts.map((a) => a.ladder_attempt);
    // One record per ladder step, in order, however often a step was sent.
    expect(ladder).toEqual(ladder.map((_, i) => i + 1));
    expect(callback.attempt_count).toBe(attempts.length);
    expect(attempts.at(-1)).toMatchObject({ error: null, status: 200 });
    if (path.startsWith('/flaky')) expect(callback.ladder_attempt).toBe(3);
  }
  // The attempt cut off by the kill was made again, under the same number.
  const hang = await h.callbacks.attempts(ids['/hang-once']);
  expect(hang).toEqual([expect.objectContaining({ number: 1, ladder_attempt: 1, status: 200 })]);
  expect(h.receiver.requestsTo('/hang-once')).toHaveLength(2);

  const always = await h.settled(ids['/always'], ['failed'], 30_000);
  expect(always.attempts.map((a) => a.ladder_attempt)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(always.callback).toMatchObject({ state: 'failed', attempt_count: 6, next_attempt_ms: null });

  for (const [path, messageId] of Object.entries(ids)) {
    const requests = h.receiver.requestsTo(path);
    expect(requests.length).toBeGreaterThanOrEqual(1);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
  }
});
