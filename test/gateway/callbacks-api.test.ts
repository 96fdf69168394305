import { api, eventually, type TestWorkspace } from '../support/stack';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { JobClient } from '../dispatcher/support/jobs';

/**
 * The Callbacks API and GET /v1/images against the three real services and a real HTTPS receiver.
 * Short gaps, so that a receiver that always answers 503 ends its callback `failed` in seconds.
 */
let h: DispatcherHarness;
let call: ReturnType<typeof api>;
/** Callback ids of the main workspace: delivered, failed (until a manual retry), and an image.failed event. */
let delivered: { jobId: string; id: string };
let failed: { jobId: string; id: string };
let moderated: { jobId: string; id: string };

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Waits until the wall clock is in a later second than `s`, so creation times can be told apart. */
const pastSecond = (s: number) => eventually(() => (nowSeconds() > s ? true : undefined), 3_000, `second ${s} to pass`);

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms', WEBHOOK_TIMEOUT_MS: '5000' }, { inProcess: true });
  call = api(h.stack, h.workspace.apiKey);
  h.receiver.script('/ok', () => ({ status: 200, body: 'thanks' }));
  // Six automatic attempts fail; the manual retry of the test below then delivers.
  h.receiver.script('/flaky', (n) => (n <= 6 ? { status: 503, body: 'down' } : { status: 204 }));
  h.receiver.script('/down', () => ({ status: 503 }));

  const a = await h.jobs.image(h.receiver.url('/ok'));
  delivered = { jobId: a, id: await h.messageIdOf(a) };
  await h.settled(delivered.id, ['delivered']);
  await pastSecond(nowSeconds());
  const b = await h.jobs.image(h.receiver.url('/flaky'));
  failed = { jobId: b, id: await h.messageIdOf(b) };
  await h.settled(failed.id, ['failed']);
  await pastSecond(nowSeconds());
  const c = await h.jobs.image(h.receiver.url('/ok'), 'something forbidden');
  moderated = { jobId: c, id: await h.messageIdOf(c) };
  await h.settled(moderated.id, ['delivered']);
});

afterAll(async () => {
  await h?.stop();
});

describe('GET /v1/callbacks', () => {
  it('lists newest first with cursor pagination', async () => {
    const all = await call('/v1/callbacks');
    expect(all.status).toBe(200);
    expect(all.json).toMatchObject({ object: 'list', has_more: false, first_id: moderated.id, last_id: delivered.id });
    expect(all.json.data.map((c: { id: string }) => c.id)).toEqual([moderated.id, failed.id, delivered.id]);
    expect(all.headers.get('x-ratelimit-limit-requests')).not.toBeNull();

    const first = await call('/v1/callbacks?limit=2');
    expect(first.json.data.map((c: { id: string }) => c.id)).toEqual([moderated.id, failed.id]);
    expect(first.json.has_more).toBe(true);
    const rest = await call(`/v1/callbacks?limit=2&after=${first.json.last_id}`);
    expect(rest.json.data.map((c: { id: string }) => c.id)).toEqual([delivered.id]);
    expect(rest.json.has_more).toBe(false);
  });

  it('renders the callback object of design section 2 (endpoint_id null for a request’s own callback_url), times in Unix seconds', async () => {
    const { json } = await call(`/v1/callbacks?job_id=${delivered.jobId}`);
    expect(json.data).toHaveLength(1);
    const cb = json.data[0];
    expect(Object.keys(cb).sort()).toEqual(
      ['attempt_count', 'created_at', 'delivered_at', 'endpoint_id', 'id', 'job_id', 'next_attempt_at', 'object', 'status', 'type', 'url'].sort(),
    );
    expect(cb).toMatchObject({
      id: delivered.id,
      object: 'callback',
      type: 'image.completed',
      job_id: delivered.jobId,
      endpoint_id: null,
      url: h.receiver.url('/ok'),
      status: 'delivered',
      attempt_count: 1,
      next_attempt_at: null,
    });
    expect(Number.isInteger(cb.created_at)).toBe(true);
    expect(Number.isInteger(cb.delivered_at)).toBe(true);
    expect(Math.abs(cb.created_at - nowSeconds())).toBeLessThan(120);
  });

  it('filters by status, type, job_id and creation time', async () => {
    const ids = async (query: string) => (await call(`/v1/callbacks?${query}`)).json.data.map((c: { id: string }) => c.id);
    expect(await ids('status=failed')).toEqual([failed.id]);
    expect(await ids('status=delivered')).toEqual([moderated.id, delivered.id]);
    expect(await ids('status=pending')).toEqual([]);
    expect(await ids('type=image.failed')).toEqual([moderated.id]);
    expect(await ids('type=image.completed')).toEqual([failed.id, delivered.id]);
    expect(await ids('status=delivered&type=image.completed')).toEqual([delivered.id]);
    expect(await ids(`job_id=${failed.jobId}`)).toEqual([failed.id]);
    expect(await ids('job_id=req_nosuchjob')).toEqual([]);

    const created = async (id: string) => (await call(`/v1/callbacks/${id}`)).json.created_at as number;
    const [tA, tB, tC] = [await created(delivered.id), await created(failed.id), await created(moderated.id)];
    expect(tA).toBeLessThan(tB);
    expect(tB).toBeLessThan(tC);
    // created_after inclusive, created_before exclusive.
    expect(await ids(`created_after=${tB}`)).toEqual([moderated.id, failed.id]);
    expect(await ids(`created_before=${tB}`)).toEqual([delivered.id]);
    expect(await ids(`created_after=${tB}&created_before=${tC}`)).toEqual([failed.id]);
    expect(await ids(`created_after=${tA}&created_before=${tC}&limit=1&after=${failed.id}`)).toEqual([delivered.id]);
  });

  it('refuses bad filters in the documented error shape', async () => {
    for (const [query, param] of [
      ['status=lost', 'status'],
      ['type=video.started', 'type'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['created_after=yesterday', 'created_after'],
      ['created_after=2000000000&created_before=1000000000', 'created_before'],
      ['created_after=1800000000&created_before=1800000000', 'created_before'],
      ['colour=blue', 'colour'],
      // A cursor that names no callback of this workspace: an empty page would read as the end.
      ['after=msg_nosuchcallback', 'after'],
      [`after=${delivered.jobId}`, 'after'],
      [`job_id=${failed.jobId}&after=${delivered.id}`, 'after'],
    ]) {
      const res = await call(`/v1/callbacks?${query}`);
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ type: 'invalid_request_error', param });
    }
  });
});

describe('GET /v1/callbacks/{id}', () => {
  it('adds every attempt, with the phase timings of a delivery over real HTTPS', async () => {
    const res = await call(`/v1/callbacks/${delivered.id}`);
    expect(res.status).toBe(200);
    expect(res.json.attempts).toHaveLength(1);
    const [attempt] = res.json.attempts;
    expect(Object.keys(attempt).sort()).toEqual(
      ['address', 'duration_ms', 'error', 'number', 'response_excerpt', 'sent_at', 'status_code', 'timing', 'trigger'].sort(),
    );
    expect(attempt).toMatchObject({ number: 1, trigger: 'scheduled', status_code: 200, error: null, address: '127.0.0.1', response_excerpt: 'thanks' });
    expect(Number.isInteger(attempt.sent_at)).toBe(true);
    expect(Object.keys(attempt.timing).sort()).toEqual(['connect_ms', 'dns_ms', 'first_byte_ms', 'tls_ms']);
    // A TLS handshake and an answer happened: those phases are measured.
    for (const phase of ['connect_ms', 'tls_ms', 'first_byte_ms']) expect(typeof attempt.timing[phase]).toBe('number');
  });

  it('shows the six failed automatic attempts with their answers', async () => {
    const { json } = await call(`/v1/callbacks/${failed.id}`);
    expect(json).toMatchObject({ status: 'failed', attempt_count: 6, next_attempt_at: null, delivered_at: null });
    expect(json.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const a of json.attempts) expect(a).toMatchObject({ trigger: 'scheduled', status_code: 503, error: 'http_error', response_excerpt: 'down' });
  });
});

describe('POST /v1/callbacks/{id}/retry', () => {
  it('answers 202 with the callback; the manual attempt lands in the log and moves the status', async () => {
    const res = await call(`/v1/callbacks/${failed.id}/retry`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ id: failed.id, object: 'callback', status: 'failed', attempt_count: 6 });

    const detail = await eventually(
      async () => {
        const { json } = await call(`/v1/callbacks/${failed.id}`);
        return json.attempt_count === 7 ? json : undefined;
      },
      20_000,
      'the manual attempt',
    );
    expect(detail).toMatchObject({ status: 'delivered', next_attempt_at: null });
    expect(detail.attempts[6]).toMatchObject({ number: 7, trigger: 'manual', status_code: 204, error: null });
    // The status filter follows the state change.
    const ids = async (query: string) => (await call(`/v1/callbacks?${query}`)).json.data.map((c: { id: string }) => c.id);
    expect(await ids('status=failed')).toEqual([]);
    expect(await ids('status=delivered')).toEqual([moderated.id, failed.id, delivered.id]);
  });

  it('makes an attempt for every 202, however many arrive at once', async () => {
    const before = (await call(`/v1/callbacks/${moderated.id}`)).json.attempt_count as number;
    const answers = await Promise.all(Array.from({ length: 12 }, () => call(`/v1/callbacks/${moderated.id}/retry`, { method: 'POST' })));
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(202));
    const detail = await eventually(
      async () => {
        const { json } = await call(`/v1/callbacks/${moderated.id}`);
        return json.attempt_count >= before + 12 ? json : undefined;
      },
      20_000,
      'twelve manual attempts',
    );
    expect(detail.attempt_count).toBe(before + 12);
    expect(detail.attempts.filter((a: { trigger: string }) => a.trigger === 'manual')).toHaveLength(12);
  });

  it('makes one attempt for a call repeated with its Idempotency-Key, however many repeats arrive at once', async () => {
    const before = (await call(`/v1/callbacks/${moderated.id}`)).json.attempt_count as number;
    const keyed = () => call(`/v1/callbacks/${moderated.id}/retry`, { method: 'POST', headers: { 'idempotency-key': 'retry-moderated-once' } });
    // The first call and its repeats all at once: one of them makes the attempt.
    const answers = await Promise.all(Array.from({ length: 9 }, keyed));
    for (const res of answers) expect([res.status, res.json.id]).toEqual([202, moderated.id]);
    expect(answers.map((res) => res.headers.get('idempotent-replayed')).sort()).toEqual([null, ...Array(8).fill('true')]);
    await eventually(
      async () => ((await call(`/v1/callbacks/${moderated.id}`)).json.attempt_count === before + 1 ? true : undefined),
      20_000,
      'the manual attempt',
    );
    // Once made, a further repeat still makes none.
    expect((await keyed()).headers.get('idempotent-replayed')).toBe('true');
    await h.deliveriesSettled();
    expect((await call(`/v1/callbacks/${moderated.id}`)).json.attempt_count).toBe(before + 1);

    // The same key for another callback's retry, or for a job, is refused; a new key makes an attempt.
    for (const res of [
      await call(`/v1/callbacks/${failed.id}/retry`, { method: 'POST', headers: { 'idempotency-key': 'retry-moderated-once' } }),
      await call('/v1/images/generations', {
        method: 'POST',
        headers: { 'idempotency-key': 'retry-moderated-once' },
        json: { prompt: 'a kite', size: '256x256', callback_url: h.receiver.url('/ok') },
      }),
    ]) {
      expect([res.status, res.json.error]).toEqual([409, expect.objectContaining({ type: 'conflict_error', code: 'idempotency_key_reused' })]);
    }
    const another = await call(`/v1/callbacks/${moderated.id}/retry`, { method: 'POST', headers: { 'idempotency-key': 'retry-moderated-twice' } });
    expect([another.status, another.headers.get('idempotent-replayed')]).toEqual([202, null]);
    await eventually(
      async () => ((await call(`/v1/callbacks/${moderated.id}`)).json.attempt_count === before + 2 ? true : undefined),
      20_000,
      "the second key's attempt",
    );
  });
});

describe('another workspace', () => {
  let other: TestWorkspace;
  let otherCall: ReturnType<typeof api>;

  beforeAll(async () => {
    other = await h.stack.createWorkspace('other');
    otherCall = api(h.stack, other.apiKey);
  });

  it('gets 404 not_found_error for a callback id it does not own, exactly like a missing one', async () => {
    const missing = await otherCall('/v1/callbacks/msg_doesnotexist');
    for (const res of [
      await otherCall(`/v1/callbacks/${delivered.id}`),
      await otherCall(`/v1/callbacks/${delivered.id}/retry`, { method: 'POST' }),
      missing,
      await otherCall('/v1/callbacks/msg_doesnotexist/retry', { method: 'POST' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ type: 'not_found_error', code: 'not_found', param: null });
    }
    expect((await otherCall(`/v1/callbacks/${delivered.id}`)).json.error.message).toBe(missing.json.error.message.replace('msg_doesnotexist', delivered.id));
    expect((await otherCall('/v1/callbacks')).json).toMatchObject({ data: [], has_more: false });
    expect((await otherCall(`/v1/callbacks?job_id=${delivered.jobId}`)).json.data).toEqual([]);
    // Nothing was queued for the refused retry.
    expect((await call(`/v1/callbacks/${delivered.id}`)).json.attempt_count).toBe(1);
  });

  it('lists only its own image requests in GET /v1/images', async () => {
    const clientOfOther = new JobClient(h.stack, other.apiKey);
    const own = await clientOfOther.image(h.receiver.url('/ok'), 'a quiet field');
    const list = await otherCall('/v1/images');
    expect(list.json).toMatchObject({ object: 'list', first_id: own, last_id: own, has_more: false });
    expect(list.json.data).toHaveLength(1);
    expect(list.json.data[0]).toMatchObject({ id: own, object: 'image.generation' });
  });
});

describe('GET /v1/images', () => {
  it('lists the image requests newest first, with pagination', async () => {
    const expected = [moderated.jobId, failed.jobId, delivered.jobId];
    const all = await call('/v1/images');
    expect(all.status).toBe(200);
    expect(all.json.data.map((j: { id: string }) => j.id)).toEqual(expected);
    expect(all.json.data[2]).toMatchObject({ object: 'image.generation', status: 'completed', callback_url: h.receiver.url('/ok') });
    const first = await call('/v1/images?limit=2');
    expect(first.json).toMatchObject({ has_more: true, first_id: expected[0], last_id: expected[1] });
    const rest = await call(`/v1/images?limit=2&after=${first.json.last_id}`);
    expect(rest.json).toMatchObject({ has_more: false, data: [expect.objectContaining({ id: expected[2] })] });
    expect((await call('/v1/images?limit=500')).json.error).toMatchObject({ type: 'invalid_request_error', param: 'limit' });
  });
});

describe('POST /v1/callbacks/recover', () => {
  let ws: TestWorkspace;
  let wsCall: ReturnType<typeof api>;
  let client: JobClient;

  const failedCallback = async () => {
    const jobId = await client.image(h.receiver.url('/down'));
    const id = await h.messageIdOf(jobId);
    await h.settled(id, ['failed']);
    return id;
  };
  const manualAttempts = async (id: string) =>
    (await wsCall(`/v1/callbacks/${id}`)).json.attempts.filter((a: { trigger: string }) => a.trigger === 'manual').length as number;

  beforeAll(async () => {
    ws = await h.stack.createWorkspace('recovery');
    wsCall = api(h.stack, ws.apiKey);
    client = new JobClient(h.stack, ws.apiKey);
  });

  it('retries every failed callback of the window once per recovery, and leaves the rest alone', async () => {
    const outside = await failedCallback();
    const outsideCreated = (await wsCall(`/v1/callbacks/${outside}`)).json.created_at as number;
    await pastSecond(outsideCreated);
    const since = nowSeconds();
    const inside = [await failedCallback(), await failedCallback()];
    const delivered = await client.image(h.receiver.url('/ok'));
    await h.settled(await h.messageIdOf(delivered), ['delivered']);

    const res = await wsCall('/v1/callbacks/recover', { method: 'POST', json: { since } });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ object: 'callback.recovery', since, count: 2 });
    expect(res.json.id).toMatch(/^rcv_/);
    expect(res.json.until).toBeGreaterThanOrEqual(since);
    expect(res.json.rate_per_second).toBeGreaterThan(0);

    for (const id of inside) await eventually(async () => ((await manualAttempts(id)) === 1 ? true : undefined), 20_000, `recovery attempt of ${id}`);
    expect(await manualAttempts(outside)).toBe(0);

    // A second call is a new recovery: each failed callback in the window gets one more attempt.
    const again = await wsCall('/v1/callbacks/recover', { method: 'POST', json: { since, until: nowSeconds() + 1 } });
    expect(again.status).toBe(202);
    expect(again.json).toMatchObject({ count: 2 });
    expect(again.json.id).not.toBe(res.json.id);
    for (const id of inside) await eventually(async () => ((await manualAttempts(id)) === 2 ? true : undefined), 20_000, `second recovery of ${id}`);
    expect(await manualAttempts(outside)).toBe(0);
    // Still failed: a manual attempt that fails changes no state.
    expect((await wsCall('/v1/callbacks?status=failed')).json.data).toHaveLength(3);
  });

  it('refuses a request without since, or with until before since', async () => {
    const missing = await wsCall('/v1/callbacks/recover', { method: 'POST', json: {} });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ type: 'invalid_request_error', param: 'since', code: 'missing_required_parameter' });
    const backwards = await wsCall('/v1/callbacks/recover', { method: 'POST', json: { since: 100, until: 50 } });
    expect(backwards.status).toBe(400);
    expect(backwards.json.error).toMatchObject({ param: 'until' });
    // Without until the window ends now: a since after now would make it run backwards too.
    const future = await wsCall('/v1/callbacks/recover', { method: 'POST', json: { since: nowSeconds() + 3_600 } });
    expect([future.status, future.json.error]).toEqual([400, expect.objectContaining({ param: 'since', code: 'invalid_value' })]);
    // A client clock a few seconds ahead reads as now: an empty window, not a backwards one.
    const skewed = await wsCall('/v1/callbacks/recover', { method: 'POST', json: { since: nowSeconds() + 5 } });
    expect(skewed.status).toBe(202);
    expect(skewed.json.count).toBe(0);
    expect(skewed.json.since).toBeLessThanOrEqual(skewed.json.until);
  });
});
