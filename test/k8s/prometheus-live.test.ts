// The prod alerts and autoscaling queries evaluated by a real Prometheus that scrapes the three real
// services' ops ports, so a metric or label name that drifted from what the code exports shows up
// as a query that never moves. The KEDA ScaledObjects' queries (read from the prod overlay) follow
// each queue's backlog while its worker is stopped, and MediaCallbacksFailing fires while a
// receiver answers 500.
import { resolve } from 'node:path';
import { api, eventually, type ServiceName } from '../support/stack';
import { TestPrometheus, type PromAlert } from '../support/prometheus';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { kustomizeLite } from './kustomize-lite';

const ROOT = resolve(__dirname, '../..');
const SERVICES: ServiceName[] = ['api-gateway', 'generator', 'webhook-dispatcher'];
const prod = kustomizeLite(resolve(ROOT, 'k8s/overlays/prod'));

/** Every prometheus trigger of the ScaledObjects, by the queue its query counts. */
const scalers = prod
  .filter((o) => o.kind === 'ScaledObject')
  .flatMap((s) =>
    s.spec.triggers.map((t: any) => ({
      queue: /queue="([^"]+)"/.exec(t.metadata.query)![1],
      query: t.metadata.query as string,
      threshold: Number(t.metadata.threshold),
      minReplicas: s.spec.minReplicaCount as number,
    })),
  );
const scaler = (queue: string) => scalers.find((s) => s.queue === queue)!;

const rule = prod.find((o) => o.kind === 'PrometheusRule')!;
const callbacksFailing = rule.spec.groups.flatMap((g: any) => g.rules).find((r: any) => r.alert === 'MediaCallbacksFailing');
// The deployed expressions, 10m windows included, but every `for:` cut to 2 s and the groups
// evaluated every second: a test cannot wait 15 minutes for an alert to fire. Twenty callbacks
// failing six times each are enough attempts for the 10m rates to pass 0.05/s.
const ruleGroups = rule.spec.groups.map((g: any) => ({ ...g, interval: '1s', rules: g.rules.map((r: any) => ({ ...r, for: '2s' })) }));

let h: DispatcherHarness;
let prometheus: TestPrometheus;
/** Callbacks that ended failed, and jobs that waited in the backlogs: each test hands them on. */
const failedCallbacks: string[] = [];
const queuedJobs: string[] = [];

/** Ops port of each service, kept across restarts: Prometheus scrapes fixed targets. */
const opsPorts = new Map<ServiceName, string>();

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s', WEBHOOK_TIMEOUT_MS: '5000' });
  for (const name of SERVICES) opsPorts.set(name, new URL(h.stack.service(name).opsUrl).port);
  prometheus = await TestPrometheus.start({
    targets: Object.fromEntries(SERVICES.map((name) => [name, `127.0.0.1:${opsPorts.get(name)}`])),
    intervalSeconds: 1,
    ruleGroups,
    // What the prod PodMonitor's scrapes carry, and the scalers' queries select on.
    targetLabels: { namespace: prod.find((o) => o.kind === 'ScaledObject')!.metadata.namespace! },
  });
}, 60_000);

afterAll(async () => {
  try {
    await prometheus?.stop();
  } finally {
    await h?.stop();
  }
});

const restart = (name: ServiceName) => h.stack.startService(name, { OPS_PORT: opsPorts.get(name)! });

/** Polls a query until its one value is `want`. */
const valueBecomes = (expr: string, want: number, what: string, timeoutMs = 30_000) =>
  eventually(async () => ((await prometheus.value(expr)) === want ? true : undefined), timeoutMs, `${what}: ${expr} = ${want}`).catch((err) => {
    throw new Error(`${String(err)}\nprometheus log: ${prometheus.log}`);
  });

const active = async (): Promise<PromAlert[]> => (await prometheus.alerts()).filter((a) => a.state === 'pending' || a.state === 'firing');

describe('the prod alerts and scaler queries, evaluated by Prometheus against the running services', () => {
  it('scrapes the three services, loads the seven alert rules, and reads every scaler query as 0 (not as no data)', async () => {
    await eventually(
      async () => {
        const up = await prometheus.query('up');
        return up.length === 3 && up.every((s) => s.value === 1) ? true : undefined;
      },
      20_000,
      'all three ops ports scraped',
    );
    const rules = (await prometheus.rules()).flatMap((g) => g.rules);
    expect(rules.map((r) => [r.name, r.type])).toEqual(rule.spec.groups.flatMap((g: any) => g.rules).map((r: any) => [r.alert, 'alerting']));
    await eventually(
      async () => ((await prometheus.rules()).flatMap((g) => g.rules).every((r) => r.health === 'ok') ? true : undefined),
      10_000,
      'rules evaluated',
    );
    // An empty answer would mean the query names a metric or label the services do not export.
    expect(scalers.map((s) => s.queue).sort()).toEqual(['callback-deliveries', 'generation', 'job-events']);
    for (const { query } of scalers) expect([query, await prometheus.value(query)]).toEqual([query, 0]);
    expect(await active()).toEqual([]);
  });

  it('fires MediaCallbacksFailing while a receiver answers 500, and not before', async () => {
    // One callback that fails once and is then delivered: the counters exist (a labelled counter is
    // exported from its first increment on), so Prometheus sees every failure that follows.
    h.receiver.script('/warm-up', (n) => ({ status: n === 1 ? 500 : 200 }));
    await h.settled(await h.messageIdOf(await h.jobs.image(h.receiver.url('/warm-up'))), ['delivered']);
    await valueBecomes('sum(media_callback_attempts_total)', 2, 'both warm-up attempts scraped');
    // Half the attempts failed (not over half), at a trickle: the expression is false.
    expect(await prometheus.query(callbacksFailing.expr)).toEqual([]);
    expect(await active()).toEqual([]);

    h.receiver.script('/failing', () => ({ status: 500, body: 'down' }));
    const jobs = await Promise.all(Array.from({ length: 20 }, (_, i) => h.jobs.image(h.receiver.url('/failing'), `failing ${i}`)));
    const firing = await eventually(
      async () => (await prometheus.alerts()).find((a) => a.labels.alertname === 'MediaCallbacksFailing' && a.state === 'firing'),
      60_000,
      'MediaCallbacksFailing to fire',
    );
    expect(firing.labels).toEqual({ alertname: 'MediaCallbacksFailing', severity: 'warning' });
    expect(firing.annotations.runbook).toBe('docs/operations.md#mediacallbacksfailing');
    // The deployed expression itself, at this moment: true (one sample, no labels).
    expect((await prometheus.query(callbacksFailing.expr)).map((s) => s.metric)).toEqual([{}]);
    for (const job of jobs) failedCallbacks.push(await h.messageIdOf(job));
    for (const id of failedCallbacks) await h.settled(id, ['failed'], 60_000);
    // Nothing else misfires on the services' real series.
    expect((await active()).map((a) => a.labels.alertname)).toEqual(['MediaCallbacksFailing']);
  }, 120_000);

  const backlog = 12;

  it("follows the generation backlog with the generator's scaler query while no generator runs", async () => {
    await h.stack.service('generator').kill('SIGTERM');
    h.receiver.script('/ok', () => ({ status: 200 }));
    for (let i = 0; i < backlog; i++) queuedJobs.push(await h.jobs.image(h.receiver.url('/ok'), `queued ${i}`));
    const { query, threshold, minReplicas } = scaler('generation');
    // Still counted with the generator down: the gateway exports every queue's gauges.
    await valueBecomes('up{job="generator"}', 0, 'the generator gone');
    await valueBecomes(query, backlog, 'the generation backlog');
    // What KEDA would ask for: one pod per `threshold` jobs, above the floor.
    expect(Math.ceil(backlog / threshold)).toBeGreaterThan(minReplicas);
    expect(await prometheus.value(scaler('job-events').query)).toBe(0);
  }, 60_000);

  it("follows the job-events backlog with the dispatcher's scaler query while no dispatcher runs", async () => {
    await h.stack.service('webhook-dispatcher').kill('SIGTERM');
    await restart('generator');
    await valueBecomes(scaler('generation').query, 0, 'the generator to take the backlog');
    await valueBecomes('up{job="webhook-dispatcher"}', 0, 'the dispatcher gone');
    await valueBecomes(scaler('job-events').query, backlog, 'the finished jobs waiting for a dispatcher');
  }, 60_000);

  it('follows the callback-deliveries backlog (manual retries queued while no dispatcher runs), then every query falls to 0 as the dispatcher delivers', async () => {
    const call = api(h.stack, h.workspace.apiKey);
    for (const id of failedCallbacks) expect((await call(`/v1/callbacks/${id}/retry`, { method: 'POST' })).status).toBe(202);
    const deliveries = scaler('callback-deliveries').query;
    await valueBecomes(deliveries, failedCallbacks.length, 'the manual retries waiting for a dispatcher');
    expect(await prometheus.value(scaler('job-events').query)).toBe(backlog);

    h.receiver.script('/failing', () => ({ status: 200 }));
    await restart('webhook-dispatcher');
    for (const { query } of scalers) await valueBecomes(query, 0, 'the dispatcher to take both backlogs');
    for (const id of failedCallbacks) await h.settled(id, ['delivered']);
    for (const job of queuedJobs) await h.settled(await h.messageIdOf(job), ['delivered']);
  }, 60_000);
});
