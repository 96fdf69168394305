// The trace context a caller sends with an API call (`traceparent`, `tracestate`) is the caller's to
// choose, so by default a job does not live under it: the request starts a trace of our own and keeps
// the caller's span only as a link. Followed as in traces.test.ts, through the three real services
// and a real OTLP/HTTP receiver. With OTEL_TRUST_INCOMING_TRACE_CONTEXT (a proxy in front that sets
// the headers itself) the caller's context is continued.
import { randomBytes } from 'node:crypto';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { api, eventually } from '../support/stack';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { DashboardClient } from '../dashboard/support/api-client';

const SERVER = 2;
const CLIENT = 3;

interface Traced {
  jobId: string;
  callbackId: string;
  /** Every exported span of the job's trace, by start: the request, the generation, the callback attempt. */
  spans: ReceivedSpan[];
  request: ReceivedSpan;
  generation: ReceivedSpan;
  attempt: ReceivedSpan;
}

async function start(env: Record<string, string> = {}): Promise<{ otlp: OtlpReceiver; h: DispatcherHarness }> {
  const otlp = await OtlpReceiver.start();
  const h = await DispatcherHarness.start({
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...env,
  });
  return { otlp, h };
}

/** An asynchronous image requested with `headers`, delivered at the first attempt, and its trace as exported. */
async function tracedJob(otlp: OtlpReceiver, h: DispatcherHarness, headers: Record<string, string>): Promise<Traced> {
  const path = `/traced-${randomBytes(4).toString('hex')}`;
  h.receiver.script(path, () => ({ status: 200 }));
  const res = await api(h.stack, h.workspace.apiKey)('/v1/images/generations', {
    method: 'POST',
    headers,
    json: { model: 'pixel-1', prompt: 'a lantern in the fog', size: '256x256', callback_url: h.receiver.url(path) },
  });
  expect([res.status, res.text]).toEqual([202, expect.any(String)]);
  const jobId = res.json.id as string;
  const { callback } = await h.settled(await h.messageIdOf(jobId), ['delivered']);
  const generation = await eventually(
    async () => otlp.spans.find((s) => s.name === 'generate image' && s.attributes['media.job.id'] === jobId),
    15_000,
    'the generation span',
  );
  const spans = await eventually(
    async () => {
      const all = otlp.trace(generation.traceId);
      const done = all.some((s) => s.kind === SERVER) && all.some((s) => s.kind === CLIENT && s.attributes['media.callback.id'] === callback.id);
      return done ? all : undefined;
    },
    15_000,
    'the request and the callback attempt in the generation’s trace',
  );
  const request = spans.find((s) => s.kind === SERVER && s.name === 'POST /v1/images/generations')!;
  const attempt = spans.find((s) => s.kind === CLIENT && s.attributes['media.callback.id'] === callback.id)!;
  return { jobId, callbackId: callback.id, spans, request, generation, attempt };
}

/** A caller's span context, as another system would send it. */
function foreignContext(flags: '00' | '01') {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${flags}` };
}

describe('an API call carrying a trace context of its own (default: not trusted)', () => {
  let otlp: OtlpReceiver;
  let h: DispatcherHarness;

  beforeAll(async () => {
    ({ otlp, h } = await start());
  }, 60_000);

  afterAll(async () => {
    await h?.stop();
    await otlp?.stop();
  });

  it.each([
    ['off', '00'],
    ['on', '01'],
  ] as const)(
    'gives the job a trace of its own, all of it exported, with no foreign tracestate, and links the request to the caller (sampled flag %s)',
    async (_, flags) => {
      const caller = foreignContext(flags);
      const job = await tracedJob(otlp, h, { traceparent: caller.traceparent, tracestate: 'evil=<script>' });

      // Its own trace id, started by the request; the caller's span is a link, without its tracestate.
      expect(job.request.traceId).not.toBe(caller.traceId);
      expect(job.request).toMatchObject({
        service: 'api-gateway',
        parentSpanId: '',
        attributes: { 'http.response.status_code': 202 },
        links: [{ traceId: caller.traceId, spanId: caller.spanId, traceState: '' }],
      });
      // Everything the job lived through is exported under it, whatever the caller's sampled flag said.
      expect(job.generation).toMatchObject({ service: 'generator', parentSpanId: job.request.spanId });
      expect(job.attempt).toMatchObject({ service: 'webhook-dispatcher', name: 'POST', parentSpanId: job.request.spanId });
      expect(job.attempt.attributes['http.response.status_code']).toBe(200);
      // Nothing anywhere continued the caller's trace or carries its tracestate.
      expect(otlp.spans.filter((s) => s.traceId === caller.traceId)).toEqual([]);
      expect(otlp.spans.filter((s) => s.traceState !== '' || s.links.some((l) => l.traceState !== ''))).toEqual([]);
      expect(JSON.stringify(otlp.spans)).not.toContain('<script>');

      // The job is logged and shown under its own trace id.
      for (const name of ['generator', 'webhook-dispatcher'] as const) {
        const lines = h.stack.service(name).lines.filter((l) => l.job_id === job.jobId);
        expect([name, lines.length > 0, lines.every((l) => l.trace_id === job.request.traceId)]).toEqual([name, true, true]);
      }
      const dashboard = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
      const detail = await dashboard.call('GET', `/requests/${job.jobId}`);
      expect([detail.status, detail.json.trace_id]).toEqual([200, job.request.traceId]);
      expect(otlp.rejected).toEqual([]);
    },
    60_000,
  );
});

describe('with OTEL_TRUST_INCOMING_TRACE_CONTEXT=true (a proxy in front sets the trace context)', () => {
  let otlp: OtlpReceiver;
  let h: DispatcherHarness;

  beforeAll(async () => {
    ({ otlp, h } = await start({ OTEL_TRUST_INCOMING_TRACE_CONTEXT: 'true' }));
  }, 60_000);

  afterAll(async () => {
    await h?.stop();
    await otlp?.stop();
  });

  it('continues the incoming trace context: its trace id, its span as the request’s parent, its tracestate', async () => {
    const caller = foreignContext('01');
    const job = await tracedJob(otlp, h, { traceparent: caller.traceparent, tracestate: 'proxy=front' });
    expect(job.request).toMatchObject({ traceId: caller.traceId, parentSpanId: caller.spanId, traceState: 'proxy=front', links: [] });
    expect(job.generation).toMatchObject({ traceId: caller.traceId, parentSpanId: job.request.spanId });
    expect(job.attempt).toMatchObject({ traceId: caller.traceId, parentSpanId: job.request.spanId });
    expect(otlp.rejected).toEqual([]);
  }, 60_000);
});
