import { eventually } from '../support/stack';
import { TestReceiver } from './support/receiver';
import { DispatcherHarness } from './support/harness';

/**
 * SIGTERM to the dispatcher: an attempt in flight is finished and recorded before the process
 * exits 0; past SHUTDOWN_TIMEOUT_MS the process exits anyway and the attempt is made again by the
 * next dispatcher, with the same webhook-id (at least once).
 */
const SLOW_ANSWER_MS = 3_000;

let h: DispatcherHarness;
let slow: TestReceiver;

beforeAll(async () => {
  // The receiver's pause is well inside WEBHOOK_TIMEOUT_MS, and the drain deadline well past both.
  h = await DispatcherHarness.start({ WEBHOOK_TIMEOUT_MS: '10000', SHUTDOWN_TIMEOUT_MS: '15000', WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms' });
  slow = await TestReceiver.start(h.pki);
});

afterAll(async () => {
  await h?.stop();
  await slow?.stop();
});

it('finishes and records the attempt in flight, then exits 0 with "stopped"', async () => {
  slow.script('/slow', () => ({ status: 200, afterMs: SLOW_ANSWER_MS }));
  const jobId = await h.jobs.image(slow.url('/slow'), 'a slow receiver during the drain');
  const messageId = await h.messageIdOf(jobId);
  await eventually(() => (slow.requestsTo('/slow').length === 1 ? true : undefined), 15_000, 'the attempt to reach the receiver');

  const dispatcher = h.stack.service('webhook-dispatcher');
  const signalledMs = Date.now();
  const exitCode = await dispatcher.kill('SIGTERM');
  expect(exitCode).toBe(0);

  // The answer came after the signal: the drain waited for it rather than racing past it.
  const [request] = slow.requestsTo('/slow');
  expect(request.answeredMs).toBeGreaterThan(signalledMs);
  expect(request.headers['webhook-id']).toBe(messageId);

  // Everything is recorded by the time the process is gone: no polling needed.
  const callback = await h.callbacks.get(messageId);
  expect(callback).toMatchObject({ state: 'delivered', attempt_count: 1 });
  const attempts = await h.callbacks.attempts(messageId);
  expect(attempts).toEqual([expect.objectContaining({ number: 1, ladder_attempt: 1, status: 200, error: null })]);
  expect(slow.requestsTo('/slow')).toHaveLength(1);

  const messages = dispatcher.lines.map((l) => l.message);
  const draining = messages.indexOf('draining');
  expect(draining).toBeGreaterThanOrEqual(0);
  const attemptLogged = dispatcher.lines.findIndex((l) => l.message === 'callback attempt' && l.message_id === messageId);
  expect(attemptLogged).toBeGreaterThan(draining);
  expect(messages.at(-1)).toBe('stopped');
}, 60_000);

it('exits at SHUTDOWN_TIMEOUT_MS when the receiver hangs; the next dispatcher delivers it with the same webhook-id', async () => {
  // Only dispatchers started from here on get the short drain deadline.
  h.stack.env = { ...h.stack.env, SHUTDOWN_TIMEOUT_MS: '1500' };
  const dispatcher = await h.stack.startService('webhook-dispatcher');
  slow.script('/hang', (n) => (n === 1 ? 'hang' : { status: 200, afterMs: 0 }));
  const jobId = await h.jobs.image(slow.url('/hang'), 'a receiver that never answers');
  const messageId = await h.messageIdOf(jobId);
  await eventually(() => (slow.requestsTo('/hang').length === 1 ? true : undefined), 15_000, 'the attempt to reach the receiver');

  const started = Date.now();
  const exitCode = await dispatcher.kill('SIGTERM');
  const elapsed = Date.now() - started;
  expect(exitCode).toBe(0);
  // The receiver would have held it for WEBHOOK_TIMEOUT_MS (10 s); the drain gave up at 1.5 s.
  expect(elapsed).toBeGreaterThanOrEqual(1_400);
  expect(elapsed).toBeLessThan(1_500 + 2_500);
  expect(await h.callbacks.get(messageId)).toMatchObject({ state: 'pending' });
  expect(await h.callbacks.attempts(messageId)).toEqual([]);

  // The abandoned attempt's lock lapses (JOB_LOCK_MS) and the next dispatcher makes it again.
  await h.stack.startService('webhook-dispatcher');
  const { callback, attempts } = await h.settled(messageId, ['delivered'], 30_000);
  expect(callback.state).toBe('delivered');
  expect(attempts.at(-1)).toMatchObject({ status: 200, error: null });
  const requests = slow.requestsTo('/hang');
  expect(requests.length).toBeGreaterThanOrEqual(2);
  expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
}, 60_000);
