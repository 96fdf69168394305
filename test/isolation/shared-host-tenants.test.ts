// Many tenants of one receiver host, with the shipped cap and slow lane (100 and 20) against two
// real dispatcher processes sharing one Redis: ten workspaces have a hundred callbacks each hanging
// at paths of the host, an eleventh sends callbacks to a path of the same host that answers at
// once. The eleventh keeps its pace (a ratio to its baseline before, and to its same callbacks sent
// at the same moment to a host of their own), the ten make progress
// at equal rates, and the host never has more attempts in flight than its cap. Jobs are written to
// the store as finished and announced on the job-events queue, as the generator does, so the only
// timing in play is the dispatchers'.
import type { JobQueue } from '@media/queues';
import { DestinationGate, destinationOf } from '@media/callbacks';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';
import { baseEnv } from '../dispatcher/support/harness';
import { announceFinishedImage } from '../dispatcher/support/finished-job';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';
import { besideControl, finishedRun, isolationBound, jobEvents, p99 } from './support';

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
/** Another host, where the eleventh's control runs go: the ten's trouble does not reach it. */
let control: TestReceiver;
let tenants: TestWorkspace[];
let fast: TestWorkspace;

beforeAll(async () => {
  pki = makeTestPki();
  [host, control] = await Promise.all([TestReceiver.start(pki), TestReceiver.start(pki)]);
  host.scriptUnder('/hang/', () => 'hang');
  stack = await TestStack.start(['webhook-dispatcher'], {
    ...baseEnv(pki),
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(CAP),
    CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: String(SLOW_CAP),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
  });
  await stack.startService('webhook-dispatcher');
  events = jobEvents(stack);
  tenants = [];
  for (let i = 0; i < TENANTS; i++) tenants.push(await stack.createWorkspace(`tenant-${i}`));
  fast = await stack.createWorkspace('fast');
}, 60_000);

afterAll(async () => {
  await events?.close();
  await stack?.stop();
  await host?.stop();
  await control?.stop();
  pki?.cleanup();
});

/** A finished image job with a callback, announced as the generator would. */
const finished = (workspace: TestWorkspace, url: string) => announceFinishedImage(stack, events, workspace.workspaceId, url);

/** The eleventh workspace's run: job end → the host's answer, per callback, in ms. */
const runFast = (path: string) => finishedRun(stack, events, fast, host, path, FAST_RUN);

it('keeps an eleventh workspace at its pace while ten others hang at the same host, and moves the ten on at equal rates', async () => {
  const baseline = await runFast('/ok/baseline');

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
  const during = await besideControl(
    () => runFast('/ok/during'),
    () => finishedRun(stack, events, fast, control, '/ok/during', FAST_RUN),
  );
  const bound = isolationBound(baseline, during.control);
  console.log(
    `eleventh p99: baseline ${p99(baseline)} ms, while ten hang ${p99(during.judged)} ms, at the control host meanwhile ${p99(during.control)} ms (bound ${bound} ms); in flight at the host: ${host.inFlight}`,
  );
  expect(p99(during.judged)).toBeLessThanOrEqual(bound);
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
