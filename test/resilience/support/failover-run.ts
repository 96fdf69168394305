import { Redis } from 'ioredis';
import { callbackIdFor, isFinished, type JobRecord } from '@media/domain';
import { JobRepository } from '@media/jobs';
import type { DispatcherHarness } from '../../dispatcher/support/harness';
import { eventually, REDIS_URL } from '../../support/stack';

/** The Redis shape under test: how its primary dies, comes back, and is seen replaced. */
export interface Failover {
  /** SIGKILLs the primary that matters (the store's). */
  kill(): Promise<void>;
  /** Starts the killed node again; the deployment makes it a replica of its successor. */
  relaunch(): Promise<void>;
  /** Resolves once a replica holds the primary's role and the old primary is a replica. */
  settled(): Promise<void>;
  /**
   * True once a replica has been promoted (the old primary still down). When given, the run is
   * paced by it (see {@link PROMPT}); without it, by the fixed times below, which leave the
   * deployment ample time to promote before the old primary comes back.
   */
  promoted?(): Promise<boolean>;
  /** What the deployment says of its nodes now (which is primary, each node's role), for a failure's message. */
  describe?(): Promise<string>;
}

export interface FailoverRun {
  accepted: { id: string; atMs: number; tookMs: number }[];
  /** Submissions retried because intake answered 5xx or not at all. */
  retries: number;
  /** From the primary's SIGKILL to the first 202 after it. */
  intakeGapMs: number;
  /** Acknowledged (202) jobs the store no longer has. */
  lost: string[];
  /** Intake latency before the kill: p50, p99 (ms). */
  steady: { p50: number; p99: number };
  /** Each service's /readyz answers that were not 200 during the run (the switch shows there, not in liveness). */
  notReady: Record<string, number>;
}

/**
 * Reads every service's /healthz and /readyz every 250 ms until stopped. A liveness failure is a
 * restart Kubernetes would make: a service merely waiting for the new primary must not show one.
 */
function probeOps(h: DispatcherHarness): { stop(): Promise<{ livenessFailures: string[]; notReady: Record<string, number> }> } {
  const livenessFailures: string[] = [];
  const notReady: Record<string, number> = {};
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const [name, service] of h.stack.services) {
        const get = async (path: string) => {
          try {
            const res = await fetch(`${service.opsUrl}${path}`, { signal: AbortSignal.timeout(3_000) });
            return { status: res.status, body: await res.text() };
          } catch (err) {
            return { status: 0, body: String(err) };
          }
        };
        const live = await get('/healthz');
        if (live.status !== 200) livenessFailures.push(`${name}: ${live.status} ${live.body}`);
        if ((await get('/readyz')).status !== 200) notReady[name] = (notReady[name] ?? 0) + 1;
      }
      await pause(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { livenessFailures, notReady };
    },
  };
}

const SUBMIT_EVERY_MS = 125;
const SUBMIT_FOR_MS = 24_000;
const KILL_AT_MS = 6_000;
const RELAUNCH_AT_MS = 14_000;
const INTAKE_GIVE_UP_MS = 60_000;
/**
 * The schedule of a run whose deployment says when it promoted ({@link Failover.promoted}): the
 * kill after three seconds of steady intake (two dozen submissions, whose latency is reported), the
 * old primary relaunched as soon as a replica has taken its place (the order the fixed schedule
 * waits for), and submissions going on for three seconds after that, so that intake is exercised
 * while the old primary rejoins as a replica.
 */
const PROMPT = { killAtMs: 3_000, submitAfterRelaunchMs: 3_000 };

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

/**
 * Clients submit asynchronous images with callbacks at a steady rate (each with an Idempotency-Key,
 * retried on 5xx as a client should) while the primary is SIGKILLed and later brought back. Returns
 * what intake did; then holds every job the store kept to the contract: it ends, is called back
 * with exactly one webhook-id, and is charged once if completed and never if not. Nothing of the
 * stack may be on REDIS_URL's Redis (the services must not fall back to it).
 */
export async function steadyIntakeThroughFailover(h: DispatcherHarness, failover: Failover): Promise<FailoverRun> {
  const posts = new Map<string, Set<string>>();
  h.receiver.script('/failover', (_n, request) => {
    const body = JSON.parse(request.body) as { data: { id: string } };
    posts.set(body.data.id, (posts.get(body.data.id) ?? new Set()).add(request.headers['webhook-id'] ?? ''));
    return { status: 200 };
  });
  const callbackUrl = h.receiver.url('/failover');
  const started = Date.now();
  let killedAt = 0;
  const accepted: FailoverRun['accepted'] = [];
  let retries = 0;

  const submit = async (i: number) => {
    const headers = { authorization: `Bearer ${h.workspace.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `failover-${i}` };
    const body = JSON.stringify({ model: 'pixel-1', prompt: `failover #${i}`, size: '256x256', callback_url: callbackUrl });
    let lastAnswer = '';
    for (;;) {
      const sentMs = Date.now();
      try {
        const res = await fetch(`${h.stack.baseUrl}/v1/images/generations`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        const text = await res.text();
        if (res.status === 202) return void accepted.push({ id: (JSON.parse(text) as { id: string }).id, atMs: Date.now(), tookMs: Date.now() - sentMs });
        if (res.status < 500 && res.status !== 429) throw new Error(`submission ${i}: ${res.status} ${text}`);
        lastAnswer = `${res.status} ${text.slice(0, 300)}`;
      } catch (err) {
        if (String(err).includes('submission')) throw err;
        lastAnswer = String(err);
      }
      // Intake must come back well within this; past it the failover itself failed (no promotion),
      // which is said here rather than left to the test's time-out.
      if (Date.now() - started > SUBMIT_FOR_MS + INTAKE_GIVE_UP_MS) {
        const readyz = await fetch(`${h.stack.baseUrl}/readyz`).then(
          async (r) => `${r.status} ${await r.text()}`,
          (err: unknown) => String(err),
        );
        const nodes = failover.describe ? await failover.describe().catch((err: unknown) => `unknown (${String(err)})`) : 'not described';
        const gatewayLog = (h.stack.services.get('api-gateway')?.lines ?? [])
          .slice(-8)
          .map((l) => JSON.stringify(l).slice(0, 400))
          .join('\n');
        throw new Error(
          `submission ${i}: intake did not answer 202 again within ${INTAKE_GIVE_UP_MS / 1000} s; last answer: ${lastAnswer}; gateway /readyz: ${readyz}; nodes: ${nodes}\ngateway's last log lines:\n${gatewayLog}`,
        );
      }
      retries++;
      await pause(250);
    }
  };

  const probes = probeOps(h);
  /** When submissions stop. */
  let submitUntil = started + SUBMIT_FOR_MS;
  const chaos = (async () => {
    const promoted = failover.promoted?.bind(failover);
    if (!promoted) {
      await pause(KILL_AT_MS);
      killedAt = Date.now();
      await failover.kill();
      await pause(RELAUNCH_AT_MS - KILL_AT_MS);
      await failover.relaunch();
      return;
    }
    // Submissions go on until the relaunch is done (however long the promotion takes), then a while.
    submitUntil = Infinity;
    await pause(PROMPT.killAtMs);
    killedAt = Date.now();
    await failover.kill();
    // A failover that never comes is reported by the submissions' own deadline (INTAKE_GIVE_UP_MS)
    // and by `settled`; the old primary is relaunched then anyway.
    await eventually(async () => ((await promoted().catch(() => false)) ? true : undefined), INTAKE_GIVE_UP_MS, 'a replica to be promoted').catch(
      () => undefined,
    );
    await failover.relaunch();
    submitUntil = Date.now() + PROMPT.submitAfterRelaunchMs;
  })();
  // Ends the submissions if the kill or relaunch throws; its error is the run's (awaited below).
  chaos.catch(() => (submitUntil = 0));
  const submissions: Promise<void>[] = [];
  for (let i = 0; Date.now() < submitUntil; i++) {
    submissions.push(submit(i));
    await pause(SUBMIT_EVERY_MS);
  }
  await chaos;
  await Promise.all(submissions);
  await failover.settled();
  const { livenessFailures, notReady } = await probes.stop();
  if (livenessFailures.length > 0) throw new Error(`liveness failed during the failover (a restart):\n${livenessFailures.slice(0, 5).join('\n')}`);
  for (const [name, service] of h.stack.services) {
    // Readiness reads the store through the service's own connection; its answer after the switch
    // is what this holds, with room for a loaded machine (the reconnect back-off reaches 2 s a try).
    await eventually(
      async () => {
        const res = await fetch(`${service.opsUrl}/readyz`);
        return res.status === 200 ? true : Promise.reject(new Error(`${res.status} ${await res.text()}`));
      },
      60_000,
      `${name} ready again`,
    );
  }
  // A synchronous image is answered through pub/sub: the gateway's subscriber must have followed
  // the promotion too, or the call would wait out its timeout.
  await eventually(async () => ((await h.jobs.syncImage().catch(() => undefined)) ? true : undefined), 30_000, 'a synchronous image after the failover');

  const intakeGapMs = Math.min(...accepted.filter((a) => a.atMs > killedAt).map((a) => a.atMs)) - killedAt;
  const ids = accepted.map((a) => a.id);
  // Read through a connection made after the promotion (see TestStack.newClient).
  const reader = h.stack.newClient();
  reader.on('error', () => undefined);
  const store = new JobRepository(reader, h.stack.keys);
  try {
    return await holdToContract(h, store, { ids, posts, accepted, retries, intakeGapMs, killedAt, notReady });
  } finally {
    reader.disconnect();
  }
}

/** Every job the store kept ends, is called back under one webhook-id and charged once if completed; nothing on REDIS_URL. */
async function holdToContract(
  h: DispatcherHarness,
  store: JobRepository,
  run: Pick<FailoverRun, 'accepted' | 'retries' | 'intakeGapMs' | 'notReady'> & { ids: string[]; posts: Map<string, Set<string>>; killedAt: number },
): Promise<FailoverRun> {
  const { ids, posts, accepted, killedAt } = run;
  const lost = await jobsHeldToContract(h, store, ids, posts, 90_000);
  const before = accepted.filter((a) => a.atMs < killedAt).map((a) => a.tookMs);
  return {
    accepted,
    retries: run.retries,
    intakeGapMs: run.intakeGapMs,
    lost,
    steady: { p50: percentile(before, 50), p99: percentile(before, 99) },
    notReady: run.notReady,
  };
}

/**
 * Holds the acknowledged jobs `ids` to the contract, waiting up to `waitMs` for the last of them:
 * every one the store kept ends, is called back (`posts`: the webhook-ids each job's callbacks
 * carried) under exactly one webhook-id, and is charged once if completed and never if not; the
 * stack wrote nothing to REDIS_URL's Redis. Throws at the first breach; returns the ids the store
 * no longer has (lost with a primary).
 */
export async function jobsHeldToContract(
  h: DispatcherHarness,
  store: JobRepository,
  ids: string[],
  posts: Map<string, Set<string>>,
  waitMs: number,
): Promise<string[]> {
  await eventually(
    async () => {
      const jobs = await store.getMany(ids);
      return jobs.every((j) => isFinished(j.status) && posts.has(j.id)) ? true : undefined;
    },
    waitMs,
    'every stored job to finish and be called back',
  );
  const jobs: JobRecord[] = await store.getMany(ids);
  const ledger = await store.ledger(h.workspace.workspaceId);
  for (const job of jobs) {
    if (job.kind !== 'image') throw new Error(`unexpected ${job.kind} job`);
    const event = job.status === 'completed' ? 'image.completed' : 'image.failed';
    if (!isFinished(job.status)) throw new Error(`job ${job.id} is ${job.status}`);
    const ids = [...(posts.get(job.id) ?? [])];
    if (ids.length !== 1 || ids[0] !== callbackIdFor(job.id, event)) throw new Error(`job ${job.id} was called back with ${JSON.stringify(ids)}`);
    const charges = ledger.filter((entry) => entry.job_id === job.id).length;
    if (charges !== (job.status === 'completed' ? 1 : 0)) throw new Error(`job ${job.id} (${job.status}) was charged ${charges} times`);
  }
  const shared = new Redis(REDIS_URL);
  try {
    const stray = await shared.keys(`${h.stack.prefix}*`);
    if (stray.length > 0) throw new Error(`the stack wrote to REDIS_URL's Redis: ${stray.slice(0, 5).join(', ')}`);
  } finally {
    shared.disconnect();
  }
  return ids.filter((id) => !jobs.some((j) => j.id === id));
}
