import { parseRetrySchedule } from '@media/domain';
import { verify } from '@media/callback-signing';
import { DispatcherHarness } from './support/harness';
import type { ReceivedRequest } from './support/receiver';

/**
 * The retry ladder and failure classes, against the real services. Gaps of at least a second keep
 * each attempt's `webhook-timestamp` (Unix seconds) and its links' expiry distinct.
 */
const SCHEDULE = '1000ms,1050ms,1100ms,1200ms,1300ms';
const GAPS = parseRetrySchedule(SCHEDULE);

let h: DispatcherHarness;
/** Jobs are created up front so the slow ladders run side by side while the tests wait in turn. */
const jobs: Record<string, string> = {};
let receiverHealthy = false;

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: SCHEDULE, WEBHOOK_TIMEOUT_MS: '500' }, { inProcess: true });
  h.receiver.script('/five-failures', (n) => (n <= 5 ? { status: 503, body: 'busy' } : { status: 204 }));
  h.receiver.script('/always-failing', (n) => (n <= 6 || !receiverHealthy ? { status: 500, body: 'boom' } : { status: 200, body: 'ok' }));
  h.receiver.script('/redirect', () => ({ status: 302, headers: { location: '/redirect-target' } }));
  h.receiver.script('/timeout', () => 'hang');
  h.receiver.script('/reset', () => 'reset');
  h.receiver.script('/server-error', () => ({ status: 500, body: `{"error":"${'x'.repeat(10_000)}"}` }));
  for (const path of ['/five-failures', '/always-failing', '/redirect', '/timeout', '/reset', '/server-error']) {
    jobs[path] = await h.jobs.image(h.receiver.url(path), `callback to ${path}`);
  }
});

afterAll(async () => {
  await h?.stop();
});

const linkSignature = (request: ReceivedRequest) => new URL(JSON.parse(request.body).data.data[0].url).searchParams.get('signature');

describe('retry ladder', () => {
  it('makes exactly six attempts for a receiver that fails five times, same webhook-id, fresh timestamps and links, at the scheduled gaps', async () => {
    const messageId = await h.messageIdOf(jobs['/five-failures']);
    const { callback, attempts } = await h.settled(messageId, ['delivered']);

    const requests = h.receiver.requestsTo('/five-failures');
    expect(requests).toHaveLength(6);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
    const timestamps = requests.map((r) => Number(r.headers['webhook-timestamp']));
    for (let i = 1; i < 6; i++) {
      expect(timestamps[i]).toBeGreaterThan(timestamps[i - 1]);
      // The gap before attempt i+1 is the i-th configured one, counted from the end of attempt i.
      expect(requests[i].receivedMs - requests[i - 1].receivedMs).toBeGreaterThanOrEqual(GAPS[i - 1]);
    }
    expect(new Set(requests.map(linkSignature)).size).toBe(6);
    for (const request of requests) verify(request.body, request.headers, h.workspace.signingSecret);

    expect(callback).toMatchObject({ state: 'delivered', attempt_count: 6, ladder_attempt: 6, next_attempt_ms: null });
    expect(attempts.map((a) => [a.number, a.ladder_attempt, a.trigger, a.status, a.error])).toEqual([
      [1, 1, 'scheduled', 503, 'http_error'],
      [2, 2, 'scheduled', 503, 'http_error'],
      [3, 3, 'scheduled', 503, 'http_error'],
      [4, 4, 'scheduled', 503, 'http_error'],
      [5, 5, 'scheduled', 503, 'http_error'],
      [6, 6, 'scheduled', 204, null],
    ]);
    expect(attempts[0].excerpt).toBe('busy');
  });

  it('ends failed after six failures, and a manual retry then delivers it', async () => {
    const messageId = await h.messageIdOf(jobs['/always-failing']);
    const { callback, attempts } = await h.settled(messageId, ['failed']);
    expect(callback).toMatchObject({ state: 'failed', attempt_count: 6, ladder_attempt: 6, next_attempt_ms: null, delivered_ms: null });
    expect(attempts.map((a) => a.ladder_attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(attempts.every((a) => a.status === 500 && a.error === 'http_error')).toBe(true);
    expect(h.receiver.requestsTo('/always-failing')).toHaveLength(6);

    receiverHealthy = true;
    const cli = await h.admin(['retry-callback', '--id', messageId, '--workspace', h.workspace.workspaceId]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({
      message_id: messageId,
      state: 'delivered',
      attempts: 7,
      next_attempt_at: null,
      attempt: { number: 7, ladder_attempt: null, trigger: 'manual', status: 200, error: null, address: '127.0.0.1' },
    });
    const requests = h.receiver.requestsTo('/always-failing');
    expect(requests).toHaveLength(7);
    expect(requests[6].headers['webhook-id']).toBe(messageId);
  });

  it('counts a redirect, a timeout, a reset connection and a 5xx as failed attempts, each with its error class', async () => {
    const first = async (path: string) => (await h.attempts(await h.messageIdOf(jobs[path]), 1))[0];

    expect(await first('/redirect')).toMatchObject({ status: 302, error: 'redirect', address: '127.0.0.1' });
    const timeout = await first('/timeout');
    expect(timeout).toMatchObject({ status: null, error: 'timeout', address: '127.0.0.1' });
    expect(timeout.duration_ms).toBeGreaterThanOrEqual(500);
    expect(await first('/reset')).toMatchObject({ status: null, error: 'reset', address: '127.0.0.1' });
    const serverError = await first('/server-error');
    expect(serverError).toMatchObject({ status: 500, error: 'http_error' });
    // Only the start of the answer is kept.
    expect(serverError.excerpt.length).toBeLessThanOrEqual(512);
    expect(serverError.excerpt.startsWith('{"error":"xxx')).toBe(true);

    // Redirects are never followed.
    expect(h.receiver.requestsTo('/redirect-target')).toHaveLength(0);
    // Each of them is on the ladder, with its next attempt due.
    for (const path of ['/redirect', '/timeout', '/reset', '/server-error']) {
      const callback = (await h.callbacks.get(await h.messageIdOf(jobs[path])))!;
      expect(callback.state === 'failed' || callback.next_attempt_ms !== null).toBe(true);
    }
  });
});
