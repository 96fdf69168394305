// Two customers whose callbacks go to one receiver host, as customers of an integration platform,
// a tunnel or a company gateway do, against two real dispatcher replicas on one Redis: workspace A's
// hundreds of callbacks go to paths of the host that never answer, workspace B's to a path of the
// same host that answers at once. Both workspaces' jobs are written to the store as finished and
// announced on the job-events queue, as the generator does (how fast images are made is not what is
// measured). B's callbacks must arrive as fast as without A's trouble (a ratio to B's baseline before
// it, and to B's same callbacks sent at the same moment to a host of their own), both while A's first
// attempts hang and while A is in its own slow lane; every one of A's six attempts must still be
// made, none twice; and the host never has more attempts in flight than its cap.
import type { JobQueue } from '@media/queues';
import { DestinationGate, destinationOf, headroomOf, leaseMsFor } from '@media/callbacks';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';
import { besideControl, finishedRun, isolationBound, jobEvents, p99, sixFailedAttempts } from './support';
import { baseEnv } from '../dispatcher/support/harness';
import { announceFinishedImage } from '../dispatcher/support/finished-job';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';

/** The host's cap, over both replicas; one workspace alone holds it less its headroom. */
const CAP = 200;
const SHARE = CAP - headroomOf(CAP);
/** More than A's share: some of A's attempts wait in its line. */
const HANGING = 200;
const B_RUN = 20;
/**
 * Shorter than the production timeout (15 s) so that A's 1,200 attempts end within a minute; what
 * isolation does with a dark host is the same rule at any timeout (the slow threshold is half of
 * it, a slot's lease the timeout plus 5 s). It stays well above how long A's first attempts take
 * to start (about a second for all 200: their jobs are announced at once), so that A holds its
 * whole share at once while B's run is measured; the bench's delivery-isolation phase runs the
 * production timeout.
 */
const TIMEOUT_MS = 6_000;
const LEASE_MS = leaseMsFor({ attemptTimeoutMs: TIMEOUT_MS });

let pki: TestPki;
let stack: TestStack;
let events: JobQueue<'job-events'>;
let host: TestReceiver;
/** Another host, where B's control runs go: A's trouble does not reach it. */
let control: TestReceiver;
let a: TestWorkspace;
let b: TestWorkspace;

beforeAll(async () => {
  pki = makeTestPki();
  [host, control] = await Promise.all([TestReceiver.start(pki), TestReceiver.start(pki)]);
  host.scriptUnder('/hang/', () => 'hang');
  stack = await TestStack.start(['webhook-dispatcher'], {
    ...baseEnv(pki),
    // Twice the shipped cap, and a slow lane as wide, so that A's 1,200 attempts fit in the test's
    // time; the slow lane's own cap is covered in test/dispatcher/destination-caps.test.ts and the
    // many-tenants test beside this one.
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(CAP),
    CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: String(CAP),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    // Short gaps, so that six attempts fit in the test.
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
  });
  await stack.startService('webhook-dispatcher');
  events = jobEvents(stack);
  [a, b] = [await stack.createWorkspace('a'), await stack.createWorkspace('b')];
}, 60_000);

afterAll(async () => {
  await events?.close();
  await stack?.stop();
  await host?.stop();
  await control?.stop();
  pki?.cleanup();
});

/** B's run: job end → the host's answer, per callback, in ms. */
const runB = (path: string) => finishedRun(stack, events, b, host, path, B_RUN);
/** B's run to the shared host, and the same run at the same moment to the control host. */
const runBBeside = (path: string) =>
  besideControl(
    () => runB(path),
    () => finishedRun(stack, events, b, control, path, B_RUN),
  );

it('keeps B’s callbacks to a fast path at their baseline while A’s hang at other paths of the same host, and makes every one of A’s six attempts once', async () => {
  const baseline = await runB('/ok/baseline');

  const dark: string[] = [];
  for (let i = 0; i < HANGING; i += 20)
    dark.push(
      ...(
        await Promise.all(
          Array.from({ length: Math.min(20, HANGING - i) }, (_, j) => announceFinishedImage(stack, events, a.workspaceId, host.url(`/hang/${i + j}`))),
        )
      ).map((s) => s.messageId),
    );
  // A's first attempts hang: A holding its whole share of the host, the rest of its attempts waiting.
  await eventually(() => (host.inFlight >= SHARE ? true : undefined), 60_000, "A's attempts to fill its share of the host");
  const started = host.requestsUnder('/hang/').map((r) => r.receivedMs);
  console.log(`A's first ${started.length} attempts started within ${Math.max(...started) - Math.min(...started)} ms (timeout ${TIMEOUT_MS} ms)`);
  const during = await runBBeside('/ok/during');
  const bound = isolationBound(baseline, during.control);
  console.log(
    `B p99: baseline ${p99(baseline)} ms, while A's first attempts hang ${p99(during.judged)} ms, at the control host meanwhile ${p99(during.control)} ms (bound ${bound} ms); in flight at the host: ${host.inFlight}`,
  );
  expect(p99(during.judged)).toBeLessThanOrEqual(bound);

  // A's first attempts timed out: A is in its own slow lane; B is not, and neither is the host.
  const gate = new DestinationGate(stack.redis, stack.keys, { maxInFlight: CAP, slowMaxInFlight: CAP, attemptTimeoutMs: TIMEOUT_MS });
  const shareOf = async (workspace: TestWorkspace) =>
    (await gate.ofWorkspace(workspace.workspaceId, Date.now())).find((d) => d.origin === destinationOf(host.url('/')).origin);
  const slowA = await eventually(async () => ((await shareOf(a))?.slowUntilMs ? shareOf(a) : undefined), 60_000, 'A in its own slow lane');
  expect(slowA).toMatchObject({ hostSlowUntilMs: null, lastDeliveredMs: null, failuresInRow: expect.any(Number) });
  expect(slowA!.failuresInRow).toBeGreaterThan(0);
  const afterSlow = await runBBeside('/ok/after');
  const afterBound = isolationBound(baseline, afterSlow.control);
  console.log(
    `B p99 while A is in its slow lane: ${p99(afterSlow.judged)} ms, at the control host meanwhile ${p99(afterSlow.control)} ms (bound ${afterBound} ms)`,
  );
  expect(p99(afterSlow.judged)).toBeLessThanOrEqual(afterBound);
  expect(await shareOf(b)).toMatchObject({ slowUntilMs: null, hostSlowUntilMs: null, heldBack: null, failuresInRow: 0, lastFailedMs: null });

  // Every one of A's callbacks gets its six attempts, each cut at the timeout, and none later after
  // it was due than a lease (timeout + 5 s) per round of A's share ahead of it in A's line
  // (docs/callbacks.md).
  const latest = Math.max(...(await sixFailedAttempts(stack, dark, ['timeout'], 240_000)));
  const lateBound = Math.ceil(HANGING / SHARE) * LEASE_MS;
  console.log(`latest attempt of A: ${latest} ms after it was due (bound ${lateBound} ms)`);
  expect(latest).toBeLessThanOrEqual(lateBound);
  // No attempt sent twice, and the host never had more in flight than its cap, over both replicas.
  // (An attempt may have timed out before its request got there, a busy machine can hold a TLS
  // handshake for seconds: the records above say all six were made.)
  const sent = new Map<string, number>();
  for (const r of host.requestsUnder('/hang/')) sent.set(r.headers['webhook-id']!, (sent.get(r.headers['webhook-id']!) ?? 0) + 1);
  expect(sent.size).toBe(HANGING);
  expect([...sent.values()].filter((n) => n > 6)).toEqual([]);
  expect(host.maxInFlight).toBeLessThanOrEqual(CAP);
}, 420_000);
