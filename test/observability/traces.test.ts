// One job, one trace, across three processes: an asynchronous image whose callback fails once and
// then succeeds is followed from the HTTP request that created it to its second attempt, as the
// services export it over OTLP/HTTP to a receiver the test runs (decoding what the exporters send,
// no mock of the SDK). The trace id is also in every log line the three services wrote for the job.
import { DispatcherHarness } from '../dispatcher/support/harness';
import { eventually } from '../support/stack';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { DashboardClient } from '../dashboard/support/api-client';

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

let otlp: OtlpReceiver;
let h: DispatcherHarness;

beforeAll(async () => {
  otlp = await OtlpReceiver.start();
  h = await DispatcherHarness.start({
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await otlp?.stop();
});

it('follows an image from its request to its second callback attempt in one trace, and its log lines carry the trace id', async () => {
  h.receiver.script('/traced', (n) => ({ status: n === 1 ? 500 : 200 }));
  const jobId = await h.jobs.image(h.receiver.url('/traced'));
  const { callback } = await h.settled(await h.messageIdOf(jobId), ['delivered']);
  expect(callback.attempt_count).toBe(2);

  // The request's span names the job; its trace holds everything else.
  const root = await eventually(
    async () => otlp.spans.find((s) => s.kind === SERVER && s.name === 'POST /v1/images/generations' && s.attributes['http.response.status_code'] === 202),
    15_000,
    'the request span',
  );
  const trace = await eventually(
    async () => {
      const spans = otlp.trace(root.traceId);
      return spans.filter((s) => s.kind === CLIENT).length >= 2 ? spans : undefined;
    },
    15_000,
    'the whole trace',
  );
  const named = (name: string) => trace.filter((s) => s.name === name);
  const one = (name: string): ReceivedSpan => {
    expect([name, named(name).length]).toEqual([name, 1]);
    return named(name)[0];
  };

  expect(root).toMatchObject({
    service: 'api-gateway',
    parentSpanId: '',
    attributes: { 'http.request.method': 'POST', 'http.route': '/v1/images/generations' },
  });
  const wait = one('generation wait');
  const generate = one('generate image');
  const finish = one('finish');
  const eventWait = one('job-events wait');
  const attempts = named('POST');
  expect(generate).toMatchObject({
    service: 'generator',
    kind: CONSUMER,
    parentSpanId: root.spanId,
    attributes: { 'media.model': 'pixel-1', 'media.backend': 'procedural', 'media.job.id': jobId },
  });
  expect(wait).toMatchObject({ service: 'generator', parentSpanId: root.spanId });
  expect(finish).toMatchObject({ service: 'generator', parentSpanId: generate.spanId, attributes: { 'media.job.status': 'completed' } });
  expect(eventWait).toMatchObject({ service: 'webhook-dispatcher', parentSpanId: root.spanId });
  expect(
    attempts.map((a) => [a.service, a.kind, a.parentSpanId, a.attributes['http.response.status_code'], a.attributes['error.type'] ?? null, a.status]),
  ).toEqual([
    ['webhook-dispatcher', CLIENT, root.spanId, 500, 'http_error', 2],
    ['webhook-dispatcher', CLIENT, root.spanId, 200, null, 0],
  ]);
  for (const attempt of attempts) {
    expect(attempt.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': 'localhost',
      'network.peer.address': '127.0.0.1',
      'media.callback.id': callback.id,
    });
    // Never the path (it may carry a token), a signature or a header.
    expect(JSON.stringify(attempt.attributes)).not.toMatch(/\/traced|v1,|whsec_|webhook-signature/);
  }
  // In the order a job lives them.
  const order = [root, wait, generate, finish, eventWait, ...attempts].map((s) => s.startMs);
  expect([...order].sort((a, b) => a - b)).toEqual(order);
  expect(otlp.rejected).toEqual([]);

  // Logs and traces join up: each service's lines about this job carry the trace id.
  for (const name of ['generator', 'webhook-dispatcher'] as const) {
    const lines = h.stack.service(name).lines.filter((l) => l.job_id === jobId);
    expect([name, lines.length > 0, lines.every((l) => l.trace_id === root.traceId)]).toEqual([name, true, true]);
  }
  const gatewayLines = h.stack.service('api-gateway').lines.filter((l) => l.trace_id === root.traceId);
  expect(gatewayLines.length).toBeGreaterThan(0);

  // And the page an engineer opens about the request names the trace.
  const dashboard = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
  const detail = await dashboard.call('GET', `/requests/${jobId}`);
  expect([detail.status, detail.json.trace_id]).toEqual([200, root.traceId]);
}, 60_000);
