// Many tenants of one receiver host, with the shipped cap and slow lane (100 and 20) against two
// real dispatcher processes sharing one Redis: ten workspaces have a hundred callbacks each hanging
// at paths of the host, an eleventh sends callbacks to a path of the same host that answers at
// once. The eleventh keeps its pace (a ratio to its baseline measured here), the ten make progress
// at equal rates, and the host never has more attempts in flight than its cap. Jobs are written to
// the store as finished and announced on the job-events queue, as the generator does, so the only
// timing in play is the dispatchers'.
import { createLogger } from '@media/common';
import { JobQueue } from '@media/queues';
import { DestinationGate, destinationOf } from '@media/callbacks';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';
import { baseEnv } from '../dispatcher/support/harness';
import { announceFinishedImage } from '../dispatcher/support/finished-job';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';
import { isolationBound, p99 } from './support';

const CAP = 100;
const SLOW_CAP = 20;
const TENANTS = 10;
const HANGING_EACH = 100;
const FAST_RUN = 20;
/** Short, so that the ten's attempts come round many times within the test. */
const TIMEOUT_MS = 2_000;
/** The ten's attempts counted while their rates are compared. */
const WINDOW_ATTEMPTS = 1_000;

let pki: TestPki;
let stack: TestStack;
let events: JobQueue<'job-events'>;
let host: TestReceiver;
let tenants: TestWorkspace[];
let fast: TestWorkspace;

beforeAll(async () => {
  pki = makeTestPki();
  host = await TestReceiver.start(pki);
  host.scriptUnder('/hang/', () => 'hang');
  stack = await TestStack.start(['webhook-dispatcher'], {
    ...baseEnv(pki),
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(CAP),
    CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: String(SLOW_CAP),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
  });
  await stack.startService('webhook-dispatcher');
  events = new JobQueue('job-events', stack.redis, stack.prefix, createLogger('test', 'error'));
  tenants = [];
  for (let i = 0; i < TENANTS; i++) tenants.push(await stack.createWorkspace(`tenant-${i}`));
  fast = await stack.createWorkspace('fast');
}, 60_000);

afterAll(async () => {
  await events?.close();
  await stack?.stop();
  await host?.stop();
  pki?.cleanup();
});

/** A finished image job with a callback, announced as the generator would. */
const finished = (workspace: TestWorkspace, url: string) => announceFinishedImage(stack, events, workspace.workspaceId, url);

/** The eleventh workspace's run: job end → the host's answer, per callback, in ms. */
async function runFast(path: string): Promise<number[]> {
  const sent = await Promise.all(Array.from({ length: FAST_RUN }, () => finished(fast, host.url(path))));
  return Promise.all(
    sent.map(async ({ messageId, finishedMs }) => {
      const got = await eventually(
        () => host.requestsTo(path).find((r) => r.headers['webhook-id'] === messageId && r.answeredMs),
        30_000,
        `delivery of ${messageId}`,
      );
      return got.answeredMs! - finishedMs;
    }),
  );
}

it('keeps an eleventh workspace at its pace while ten others hang at the same host, and moves the ten on at equal rates', async () => {
  const baseline = await runFast('/ok/baseline');
  const bound = isolationBound(baseline);

  for (const [i, tenant] of tenants.entries()) {
    for (let j = 0; j < HANGING_EACH; j += 25) await Promise.all(Array.from({ length: 25 }, (_, k) => finished(tenant, host.url(`/hang/${i}/${j + k}`))));
  }
  // Every callback of the ten made its first attempt, so that each of them has its whole line
  // waiting when the rates are compared (a tenant whose callbacks were still being created would
  // have fewer attempts to make, whatever the rule).
  await eventually(
    () => (new Set(host.requestsUnder('/hang/').map((r) => r.path)).size === TENANTS * HANGING_EACH ? true : undefined),
    120_000,
    "every first attempt of the ten's callbacks",
  );
  // Every one of the ten in a slow lane of its own there: each had an attempt time out.
  const gate = new DestinationGate(stack.redis, stack.keys, { maxInFlight: CAP, slowMaxInFlight: SLOW_CAP, attemptTimeoutMs: TIMEOUT_MS });
  const origin = destinationOf(host.url('/')).origin;
  await eventually(
    async () => {
      const shares = await Promise.all(tenants.map(async (t) => (await gate.ofWorkspace(t.workspaceId, Date.now())).find((d) => d.origin === origin)));
      return shares.every((s) => s?.slowUntilMs) ? true : undefined;
    },
    60_000,
    'each of the ten in its own slow lane',
  );

  const windowStartMs = Date.now();
  const during = await runFast('/ok/during');
  console.log(`eleventh p99: baseline ${p99(baseline)} ms, while ten hang ${p99(during)} ms (bound ${bound} ms); in flight at the host: ${host.inFlight}`);
  expect(p99(during)).toBeLessThanOrEqual(bound);
  // Its share, as its dashboard shows it: nothing held back, and every callback accepted.
  const mine = (await gate.ofWorkspace(fast.workspaceId, Date.now())).find((d) => d.origin === origin);
  expect(mine).toMatchObject({ heldBack: null, slowUntilMs: null, hostSlowUntilMs: null, lastFailedMs: null });
  // One of the ten, as its dashboard shows it: held back by its own slowness, its callbacks failing.
  const theirs = (await gate.ofWorkspace(tenants[0]!.workspaceId, Date.now())).find((d) => d.origin === origin);
  expect(theirs).toMatchObject({ heldBack: 'own_slowness', hostSlowUntilMs: null, lastDeliveredMs: null });

  // The ten's attempts from the window's start until a thousand more were made, per workspace.
  const inWindow = () => host.requestsUnder('/hang/').filter((r) => r.receivedMs >= windowStartMs);
  await eventually(() => (inWindow().length >= WINDOW_ATTEMPTS ? true : undefined), 120_000, `${WINDOW_ATTEMPTS} attempts of the ten`);
  const counted = inWindow().slice(0, WINDOW_ATTEMPTS);
  const windowMs = counted[counted.length - 1]!.receivedMs - windowStartMs;
  const perTenant = tenants.map((_, i) => counted.filter((r) => r.path.startsWith(`/hang/${i}/`)).length);
  const perMinute = perTenant.map((n) => Math.round((n * 60_000) / windowMs));
  console.log(`the ten's attempts per minute over ${windowMs} ms: ${perMinute.join(', ')}`);
  expect(Math.min(...perTenant)).toBeGreaterThanOrEqual(0.75 * Math.max(...perTenant));
  expect(host.maxInFlight).toBeLessThanOrEqual(CAP);
}, 240_000);
