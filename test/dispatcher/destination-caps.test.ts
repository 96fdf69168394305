// Per-destination slots against two real dispatcher processes sharing one Redis: the cap holds
// across replicas, a parked attempt holds no worker (another destination's callbacks go straight
// through even when the bad destination has more attempts than the dispatchers have workers), the
// slow lane and back-pressure lower the cap, every parked attempt is still made, and a deferred
// attempt's next_attempt_at says when. Jobs are written to the store as finished and announced on
// the job-events queue, as the generator does, so the only timing in play is the dispatchers'.
import { createLogger } from '@media/common';
import { JobQueue } from '@media/queues';
import { CallbackRepository, DestinationGate, destinationOf, headroomOf } from '@media/callbacks';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';
import { baseEnv } from './support/harness';
import { makeTestPki, type TestPki } from './support/pki';
import { announceFinishedImage } from './support/finished-job';
import { TestReceiver } from './support/receiver';
import { besideControl, finishedRun } from '../isolation/support';

const TIMEOUT_MS = 1_500;
/** One slot of headroom: one workspace alone holds 3 at most. */
const CAP = 4;
const SHARE = CAP - headroomOf(CAP);
const SLOW_CAP = 2;
/**
 * The hanging destination's callbacks in the first test: one more than the four workers of both
 * replicas (so a parked attempt that held a worker would stall everyone else) and more than one
 * workspace's share (so some are deferred). Their six attempts each run one at a time once the
 * destination is in the slow lane, at the attempt timeout apiece: each more costs six timeouts.
 */
const BAD = 5;

let pki: TestPki;
let stack: TestStack;
/** A deployment of its own (one dispatcher, the same settings), where control runs go: none of the bad destination's attempts are there. */
let controlStack: TestStack;
let controlEvents: JobQueue<'job-events'>;
let controlB: TestWorkspace;
let events: JobQueue<'job-events'>;
let callbacks: CallbackRepository;
let gate: DestinationGate;
let a: TestWorkspace;
let b: TestWorkspace;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  pki = makeTestPki();
  const env = {
    ...baseEnv(pki),
    // Two workers per queue per process, four over both replicas: fewer than the bad destination's
    // attempts, so a parked attempt that held a worker would stall everyone else.
    DISPATCHER_CONCURRENCY: '2',
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(CAP),
    CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: String(SLOW_CAP),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms',
  };
  [stack, controlStack] = await Promise.all([TestStack.start(['webhook-dispatcher'], env), TestStack.start(['webhook-dispatcher'], env)]);
  await stack.startService('webhook-dispatcher');
  events = new JobQueue('job-events', stack.redis, stack.prefix, createLogger('test', 'error'));
  controlEvents = new JobQueue('job-events', controlStack.redis, controlStack.prefix, createLogger('test', 'error'));
  controlB = await controlStack.createWorkspace('b');
  callbacks = new CallbackRepository(stack.redis, stack.keys);
  gate = new DestinationGate(stack.redis, stack.keys, { maxInFlight: CAP, slowMaxInFlight: SLOW_CAP, attemptTimeoutMs: TIMEOUT_MS });
  [a, b] = [await stack.createWorkspace('a'), await stack.createWorkspace('b')];
}, 60_000);

afterAll(async () => {
  await events?.close();
  await controlEvents?.close();
  await stack?.stop();
  await controlStack?.stop();
  for (const receiver of receivers) await receiver.stop();
  pki?.cleanup();
});

async function receiver(): Promise<TestReceiver> {
  const started = await TestReceiver.start(pki);
  receivers.push(started);
  return started;
}

/** A finished image job with a callback, announced as the generator would. */
const finished = (workspace: TestWorkspace, url: string) => announceFinishedImage(stack, events, workspace.workspaceId, url);

/** Job end → the receiver's answer, for callbacks that are delivered. */
async function deliveryLatencies(target: TestReceiver, path: string, count: number): Promise<{ latencies: number[]; explain: () => string }> {
  const sent = await Promise.all(Array.from({ length: count }, () => finished(b, target.url(path))));
  const latencies = await Promise.all(
    sent.map(async ({ messageId, finishedMs }) => {
      const request = await eventually(
        () => target.requestsTo(path).find((r) => r.headers['webhook-id'] === messageId && r.answeredMs),
        20_000,
        `delivery of ${messageId}`,
      );
      return request.answeredMs! - finishedMs;
    }),
  );
  // What a failing bound needs to be understood: the dispatchers' lines about these callbacks.
  const explain = () => {
    const lines = stack.processes.flatMap((p) => p.lines.filter((l) => sent.some((x) => x.messageId === l.message_id)));
    return `${path}: ${latencies.join(', ')} ms\n${lines.map((l) => JSON.stringify(l)).join('\n')}`;
  };
  return { latencies, explain };
}

const max = (values: number[]) => Math.max(...values);

it('keeps a hanging destination to its cap across replicas while other destinations go straight through, and still makes all six attempts', async () => {
  const healthy = await receiver();
  const hanging = await receiver();
  hanging.script('/hang', () => 'hang');

  const { latencies: baseline } = await deliveryLatencies(healthy, '/before', 6);

  const bad = await Promise.all(Array.from({ length: BAD }, () => finished(a, hanging.url('/hang'))));
  // One workspace's attempts: the cap less the headroom kept for others.
  await eventually(() => (hanging.inFlight >= SHARE ? true : undefined), 10_000, 'the hanging destination to fill its slots');
  // A deferred attempt holds no worker and says when it will be made.
  const deferred = await eventually(
    async () => {
      const [status] = (await gate.recent(Date.now())).filter((s) => s.id === destinationOf(hanging.url('/')).id);
      return status && status.deferred > 0 ? status : undefined;
    },
    10_000,
    'attempts to be deferred',
  );
  expect(deferred.inFlight).toBeLessThanOrEqual(SHARE);
  // A deferred attempt's next_attempt_at moves from when it was due to when its turn comes.
  await eventually(
    async () => {
      const waiting = (await callbacks.getMany(bad.map((c) => c.messageId))).filter((c) => c.attempt_count === 0);
      return waiting.length > 0 && waiting.every((cb) => cb.next_attempt_ms! > cb.created_ms) ? true : undefined;
    },
    5_000,
    'the deferred attempts to show when they will be made',
  );

  let explain = () => '';
  const { judged: during, control } = await besideControl(
    async () => {
      const run = await deliveryLatencies(healthy, '/during', 6);
      explain = run.explain;
      return run.latencies;
    },
    () => finishedRun(controlStack, controlEvents, controlB, healthy, '/control', 6),
  );
  // Other destinations do not wait behind the hanging one's attempts: a ratio to the baseline
  // measured above and to the same callbacks sent meanwhile on the control deployment (a busy
  // machine slows both alike), with a second's allowance.
  const reference = Math.max(max(baseline), max(control));
  const bound = Math.max(2 * reference, reference + 1_000);
  if (max(during) > bound) console.log(`baseline ${baseline.join(', ')} ms, control ${control.join(', ')} ms\n${explain()}`);
  expect(max(during)).toBeLessThanOrEqual(bound);

  // Every hanging callback still gets its six attempts, each cut at the deadline.
  for (const { messageId } of bad) {
    const ended = await eventually(
      async () => {
        const cb = await callbacks.get(messageId);
        return cb?.state === 'failed' ? cb : undefined;
      },
      90_000,
      `${messageId} to fail`,
    );
    expect(ended.ladder_attempt).toBe(6);
    const attempts = await callbacks.attempts(messageId);
    expect(attempts.map((x) => x.error)).toEqual(Array(6).fill('timeout'));
  }
  expect(hanging.requestsTo('/hang')).toHaveLength(BAD * 6);
  // The cap held over both replicas the whole time, and the slow lane's lower cap once the first
  // attempts had timed out.
  expect(hanging.maxInFlight).toBeLessThanOrEqual(SHARE);
  const metrics = await Promise.all(
    stack.processes.filter((p) => p.name === 'webhook-dispatcher').map(async (p) => (await fetch(`${p.opsUrl}/metrics`)).text()),
  );
  const deferrals = metrics.map((text) => Number(/^media_callback_deferrals_total\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0));
  expect(deferrals.reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
}, 120_000);

it('lowers a destination to the slow lane’s cap once its attempts time out', async () => {
  const hanging = await receiver();
  hanging.script('/slow', () => 'hang');
  const first = await finished(a, hanging.url('/slow'));
  await eventually(async () => ((await callbacks.get(first.messageId))?.attempt_count ? true : undefined), 10_000, 'a first timeout');
  hanging.resetMaxInFlight();
  const more = await Promise.all(Array.from({ length: 6 }, () => finished(a, hanging.url('/slow'))));
  await eventually(
    async () => ((await callbacks.getMany(more.map((c) => c.messageId))).every((c) => c.attempt_count >= 1) ? true : undefined),
    30_000,
    'every first attempt',
  );
  expect(hanging.maxInFlight).toBeLessThanOrEqual(SLOW_CAP);
}, 60_000);

it('halves the cap of a destination that answers 429 with Retry-After, for as long as it asks', async () => {
  const pushing = await receiver();
  pushing.script('/busy', () => ({ status: 429, headers: { 'retry-after': '30' }, afterMs: 300 }));
  const sent = await Promise.all(Array.from({ length: 6 }, () => finished(a, pushing.url('/busy'))));
  await eventually(() => (pushing.requestsTo('/busy').filter((r) => r.answeredMs).length >= SHARE ? true : undefined), 10_000, 'the first answers');
  pushing.resetMaxInFlight();
  await eventually(
    async () => ((await callbacks.getMany(sent.map((c) => c.messageId))).every((c) => c.attempt_count >= 1) ? true : undefined),
    30_000,
    'every first attempt',
  );
  // One at a time since it pushed back (4 halved to 2, less a slot of headroom; halved again to 1 when
  // its answers of a second later come back too), well within the 30 s it asked for.
  expect(pushing.maxInFlight).toBeLessThanOrEqual(1);
  const [status] = (await gate.recent(Date.now())).filter((s) => s.id === destinationOf(pushing.url('/')).id);
  expect(status.limit).toBeLessThanOrEqual(CAP / 2);
  expect(status.throttledUntilMs).toBeGreaterThan(Date.now());
}, 60_000);

it('shows on-call the busiest destinations by origin, and how many are saturated, slow or throttled, without a series per receiver', async () => {
  const text = await (await fetch(`${stack.service('webhook-dispatcher').opsUrl}/metrics`)).text();
  const series = text.split('\n').filter((line) => line.startsWith('media_callback_destination_attempts{'));
  // Every destination the tests above used is named (fewer than the labelled ten), plus `other`.
  for (const r of receivers) expect(series.some((line) => line.includes(`destination="https://localhost:${r.port}"`))).toBe(true);
  expect(series.some((line) => line.includes('destination="other"'))).toBe(true);
  const count = (state: string) => Number(new RegExp(`^media_callback_destinations\\{[^}]*state="${state}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1]);
  // The 429 receiver is still throttled, the hanging ones still in the slow lane (the whole host,
  // as no attempt there answered fast), and the workspace in a slow lane of its own there.
  expect(count('throttled')).toBeGreaterThanOrEqual(1);
  expect(count('slow')).toBeGreaterThanOrEqual(1);
  expect(Number(/^media_callback_destination_slow_workspaces(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
  // Why workspaces wait, never which: one series per reason.
  const reasons = text.split('\n').filter((line) => line.startsWith('media_callback_destination_held_back{'));
  expect(reasons.map((line) => /reason="([a-z_]+)"/.exec(line)?.[1]).sort()).toEqual(['host_back_pressure', 'host_busy', 'host_slow', 'own_slowness']);
});
