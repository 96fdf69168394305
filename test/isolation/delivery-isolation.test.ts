// Two customers on two real dispatcher replicas sharing one Redis: workspace A's receivers go dark
// (one never answers, one answers 503 late, seconds inside the attempt timeout) while hundreds of A's
// callbacks are due, more than the dispatchers have workers. Workspace B's callbacks to a healthy
// receiver must arrive as fast as without A's trouble: a ratio to B's baseline before it, and to a
// control run at the same moment on a deployment of its own (its own key prefix and dispatcher on
// the same Redis and machine, which A's callbacks never reach). Every one of A's callbacks must still
// get its six attempts. Jobs are written to the store as finished and announced on the job-events
// queue, as the generator does: how fast images are made is not what is measured.
import type { JobQueue } from '@media/queues';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';
import { besideControl, finishedRun, isolationBound, jobEvents, p99, sixFailedAttempts } from './support';
import { baseEnv } from '../dispatcher/support/harness';
import { announceFinishedImage } from '../dispatcher/support/finished-job';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';
import { headroomOf, leaseMsFor } from '@media/callbacks';

/** Workers per queue per dispatcher; two replicas make 200, fewer than A's 210 dark callbacks. */
const CONCURRENCY = 100;
const CAP = 95;
/** What one workspace alone holds of a destination: the cap less its headroom. */
const SHARE = CAP - headroomOf(CAP);
const HANGING = 110;
const SLOW = 100;
const B_RUN = 20;
/**
 * Two thirds of the production timeout (15 s), so that A's 1,260 attempts end sooner. What isolation
 * does with a dark receiver is the same: the slow threshold is half the timeout and a slot's lease
 * is the timeout plus 5 s. It stays long beside the time A's jobs take to be announced and their
 * first attempts to start on a loaded machine: the slow receiver's first answers must all still be
 * pending when the last of A's first attempts starts, or its slots never fill at once. The bench's
 * delivery-isolation phase runs the production timeout.
 */
const TIMEOUT_MS = 10_000;
/** The timeout, plus what a slot's lease adds to it. */
const LEASE_MS = leaseMsFor({ attemptTimeoutMs: TIMEOUT_MS });

let pki: TestPki;
let stack: TestStack;
/** The control deployment: the same settings, one dispatcher, none of A's callbacks. */
let controlStack: TestStack;
let events: JobQueue<'job-events'>;
let controlEvents: JobQueue<'job-events'>;
let healthy: TestReceiver;
let hanging: TestReceiver;
let slow: TestReceiver;
let a: TestWorkspace;
let b: TestWorkspace;
let controlB: TestWorkspace;

beforeAll(async () => {
  pki = makeTestPki();
  [healthy, hanging, slow] = await Promise.all([TestReceiver.start(pki), TestReceiver.start(pki), TestReceiver.start(pki)]);
  hanging.script('/dark', () => 'hang');
  // Slow (past half the timeout, the slow threshold) and still answered: seconds inside the timeout,
  // so that a busy machine's lag does not turn the answer into a timeout.
  slow.script('/slow', () => ({ status: 503, body: 'busy', afterMs: TIMEOUT_MS - 3_000 }));
  const env = {
    ...baseEnv(pki),
    DISPATCHER_CONCURRENCY: String(CONCURRENCY),
    // The caps bind here: without them A alone would take every worker. The slow lane's cap is the
    // base cap so that A's 1,260 attempts of up to the timeout fit in the test's time; its lower cap
    // is covered in test/dispatcher/destination-caps.test.ts.
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(CAP),
    CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: String(CAP),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    // Short gaps, so that six attempts fit in the test.
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
    JOB_LOCK_MS: '10000',
  };
  [stack, controlStack] = await Promise.all([TestStack.start(['webhook-dispatcher'], env), TestStack.start(['webhook-dispatcher'], env)]);
  await stack.startService('webhook-dispatcher');
  [events, controlEvents] = [jobEvents(stack), jobEvents(controlStack)];
  [a, b, controlB] = [await stack.createWorkspace('a'), await stack.createWorkspace('b'), await controlStack.createWorkspace('b')];
}, 60_000);

afterAll(async () => {
  await events?.close();
  await controlEvents?.close();
  await stack?.stop();
  await controlStack?.stop();
  for (const receiver of [healthy, hanging, slow]) await receiver?.stop();
  pki?.cleanup();
});

/** B's run: job end → the healthy receiver's answer, per callback, in ms. */
const runB = (path: string) => finishedRun(stack, events, b, healthy, path, B_RUN);

it('keeps B’s callbacks at their baseline while A’s receivers hang, and makes every one of A’s six attempts', async () => {
  const baseline = await runB('/baseline');

  /** A's callbacks to `url`, announced 20 at a time; their `msg_` ids. */
  const announceA = async (count: number, url: string) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 20)
      ids.push(
        ...(await Promise.all(Array.from({ length: Math.min(20, count - i) }, () => announceFinishedImage(stack, events, a.workspaceId, url)))).map(
          (s) => s.messageId,
        ),
      );
    return ids;
  };
  const dark = await announceA(HANGING, hanging.url('/dark'));
  const slowIds = await announceA(SLOW, slow.url('/slow'));
  // A's first attempts are hanging: both destinations full.
  await eventually(() => (hanging.inFlight >= SHARE && slow.inFlight >= SHARE ? true : undefined), 30_000, "A's destinations to fill A's share of their slots");

  const during = await besideControl(
    () => runB('/during'),
    () => finishedRun(controlStack, controlEvents, controlB, healthy, '/control', B_RUN),
  );
  const bound = isolationBound(baseline, during.control);
  console.log(
    `B p99: baseline ${p99(baseline)} ms, while A hangs ${p99(during.judged)} ms, the control deployment meanwhile ${p99(during.control)} ms (bound ${bound} ms); A in flight: ${hanging.inFlight} + ${slow.inFlight}`,
  );
  expect(p99(during.judged)).toBeLessThanOrEqual(bound);

  // Every one of A's callbacks gets its six attempts, each cut or answered within the timeout, and
  // none later after it was due than a lease (timeout + 5 s) per round of A's share ahead of it, as
  // docs/callbacks.md says.
  // The slow receiver's 503 comes 3 s inside the timeout after its request arrives; a machine busy
  // enough to hold a connection's set-up for longer turns that attempt into a timeout, which is
  // as much a failed attempt in the slow lane.
  const lateness = [
    ...(await sixFailedAttempts(stack, dark, ['timeout'], 180_000)),
    ...(await sixFailedAttempts(stack, slowIds, ['http_error', 'timeout'], 180_000)),
  ];
  const latest = Math.max(...lateness);
  expect(latest).toBeLessThanOrEqual(Math.ceil(Math.max(HANGING, SLOW) / SHARE) * LEASE_MS);
  console.log(`latest attempt of A: ${latest} ms after it was due (bound ${Math.ceil(HANGING / SHARE) * LEASE_MS} ms)`);
  // Each attempt was sent once. (At least once allows a repeat, with the same webhook-id, after a
  // worker lost its lock; none should happen here, and when one does the lines below say why.)
  const sent = new Map<string, number>();
  for (const r of [...hanging.requests, ...slow.requests]) sent.set(r.headers['webhook-id']!, (sent.get(r.headers['webhook-id']!) ?? 0) + 1);
  const repeated = [...sent].filter(([, n]) => n > 6).map(([id]) => id);
  if (repeated.length > 0) {
    const warnings = stack.processes
      .filter((p) => p.name === 'webhook-dispatcher')
      .flatMap((p) => p.lines.filter((l) => l.level === 'warn' || l.level === 'error'));
    console.log(
      `repeated: ${repeated.join(', ')}\n${warnings
        .slice(0, 30)
        .map((l) => JSON.stringify(l))
        .join('\n')}`,
    );
  }
  expect(repeated).toEqual([]);
  // An attempt may have timed out before its request got there (a busy machine can hold a TLS
  // handshake for seconds): the records above say all six were made; every callback got there.
  expect(new Set(slow.requestsTo('/slow').map((r) => r.headers['webhook-id'])).size).toBe(SLOW);
  expect(new Set(hanging.requestsTo('/dark').map((r) => r.headers['webhook-id'])).size).toBe(HANGING);
  // No destination ever had more attempts in flight than its cap, over both replicas.
  expect(hanging.maxInFlight).toBeLessThanOrEqual(CAP);
  expect(slow.maxInFlight).toBeLessThanOrEqual(CAP);
}, 300_000);
