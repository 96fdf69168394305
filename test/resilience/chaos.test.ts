import { createHash, randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { bullPrefix } from '@media/common';
import { callbackIdFor, type CallbackRecord, isFinished, type JobRecord, type LedgerEntry } from '@media/domain';
import { TestReceiver } from '../dispatcher/support/receiver';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { PrivateRedis } from '../support/private-redis';
import type { ServiceName, ServiceProcess } from '../support/stack';

/**
 * Fault injection (the hardening issue): while some 150 jobs are submitted, a random service is
 * SIGKILLed and restarted every 1-3 s, and Redis itself is killed and relaunched twice. After
 * the chaos stops and the system settles:
 *
 * - every accepted job (the API answered 2xx) ends, once: `completed` or `failed` in the store;
 * - it is called back: the receiver saw at least one POST for it, all with one webhook-id and one
 *   event type, and the type matches the final status;
 * - it is charged at most once, and only if completed (exactly once if completed).
 *
 * Replay a run with CHAOS_SEED=<seed> (printed at the start); CHAOS_JOBS changes the job count and
 * CHAOS_WINDOW_MS how long they are submitted for.
 * The pauses below are the chaos schedule and the client's pacing, never synchronisation: every
 * wait for an outcome polls with a deadline.
 */
const SEED = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31 - 1);
/**
 * Four clients at the pace below submit 150 jobs in about 35 s, among which some ten services are
 * killed and Redis twice: every invariant is held per job, so a longer run (CHAOS_JOBS=300 with
 * CHAOS_WINDOW_MS=75000 makes 25 kills) only draws more kills, for a soak rather than every run.
 */
const JOB_COUNT = Number(process.env.CHAOS_JOBS ?? 150);
const CLIENTS = 4;
/** Submissions stop here even if some are still being retried (they are then not accepted). */
const SUBMIT_WINDOW_MS = Number(process.env.CHAOS_WINDOW_MS ?? 40_000);
/** The chaos goes on after the submissions until this many services were killed (and Redis twice): a run on a slow machine still counts as one. */
const MIN_SERVICE_KILLS = 8;
/** How long the system gets, after the chaos ends, to finish every job and deliver every callback. */
const SETTLE_MS = 75_000;
const SERVICES: ServiceName[] = ['api-gateway', 'generator', 'webhook-dispatcher'];
/** The receiver answers 500 to at most this many attempts per callback, so no ladder (6 attempts) runs out. */
const MAX_FAILURES_PER_CALLBACK = 2;
const RECEIVER_FAILURE_RATE = 0.2;
const MAX_RECEIVER_DELAY_MS = 400;

/** mulberry32: small, seedable, good enough to pick kills and job kinds. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A deterministic draw per (seed, key), independent of the order requests arrive in. */
function hashUnit(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join(':')).digest().readUInt32BE(0) / 4_294_967_296;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Planned {
  index: number;
  kind: 'image' | 'video';
  /** Its prompt carries the moderation block-list word, so it must fail. */
  blocked: boolean;
  idempotencyKey: string | undefined;
}

interface Accepted {
  id: string;
  plan: Planned;
  tries: number;
  status: number;
}

interface Post {
  webhookId: string;
  type: string;
  dataId: string;
  dataStatus: string;
  dataCost: number | null;
  reply: number;
  receivedMs: number;
}

let redis: PrivateRedis;
let h: DispatcherHarness;
let receiver: TestReceiver;

beforeAll(async () => {
  console.log(`chaos seed ${SEED} (replay with CHAOS_SEED=${SEED})`);
  redis = await PrivateRedis.start();
  h = await DispatcherHarness.start({
    REDIS_URL: redis.url,
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms',
    WEBHOOK_TIMEOUT_MS: '5000',
    JOB_LOCK_MS: '2000',
    MODERATION_BLOCKLIST: 'forbidden',
  });
  receiver = await TestReceiver.start(h.pki);
}, 60_000);

afterAll(async () => {
  await receiver?.stop();
  await h?.stop();
  await redis?.destroy();
});

it('keeps every accepted job to one end, one callback identity and at most one charge while services and Redis are killed', async () => {
  const startedMs = Date.now();
  const planRng = rng(SEED);
  const chaosRng = rng(SEED ^ 0x5bd1e995);
  const paceRng = rng(SEED ^ 0x1b873593);

  // --- the receiver: records every POST, fails some attempts with 500, takes up to 400 ms -------
  // The pause keeps attempts in flight long enough for a dispatcher kill to land in one.
  const posts: Post[] = [];
  const perCallback = new Map<string, { count: number; failures: number }>();
  receiver.script('/chaos', (_n, request) => {
    const webhookId = request.headers['webhook-id'] ?? '';
    const seen = perCallback.get(webhookId) ?? { count: 0, failures: 0 };
    seen.count++;
    const fail = seen.failures < MAX_FAILURES_PER_CALLBACK && hashUnit(SEED, webhookId, seen.count) < RECEIVER_FAILURE_RATE;
    if (fail) seen.failures++;
    perCallback.set(webhookId, seen);
    let body: { type?: string; data?: { id?: string; status?: string; cost?: number | null } } = {};
    try {
      body = JSON.parse(request.body);
    } catch {
      // recorded with empty fields; the checks below will flag it
    }
    const reply = fail ? 500 : 200;
    posts.push({
      webhookId,
      type: String(body.type),
      dataId: String(body.data?.id),
      dataStatus: String(body.data?.status),
      dataCost: body.data?.cost ?? null,
      reply,
      receivedMs: request.receivedMs,
    });
    return { status: reply, afterMs: Math.floor(hashUnit(SEED, 'delay', webhookId, seen.count) * MAX_RECEIVER_DELAY_MS) };
  });
  const callbackUrl = receiver.url('/chaos');

  // --- the plan: mostly async images, a few short videos, a few moderation failures -------------
  const plan: Planned[] = Array.from({ length: JOB_COUNT }, (_, index) => {
    const kind = planRng() < 0.05 ? 'video' : 'image';
    const blocked = planRng() < 0.08;
    const idempotent = planRng() < 0.5;
    return { index, kind, blocked, idempotencyKey: idempotent ? `chaos-${SEED}-${index}` : undefined };
  });

  // --- every process ever started, for their logs; kills and exits ------------------------------
  const processes: { name: ServiceName; process: ServiceProcess }[] = SERVICES.map((name) => ({ name, process: h.stack.service(name) }));
  const kills: Record<ServiceName, number> = { 'api-gateway': 0, generator: 0, 'webhook-dispatcher': 0 };
  const unexpectedExits: { service: ServiceName; pid: number | undefined; exitCode: number | null; lastLines: unknown[] }[] = [];
  let redisRestarts = 0;
  const chaosLog: string[] = [];
  const note = (text: string) => chaosLog.push(`${((Date.now() - startedMs) / 1000).toFixed(1)}s ${text}`);

  const startService = async (name: ServiceName) => {
    let lastError: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const started = await h.stack.startService(name);
        processes.push({ name, process: started });
        return;
      } catch (err) {
        lastError = err;
        note(`start of ${name} failed: ${String(err).slice(0, 300)}`);
      }
    }
    throw lastError;
  };

  /** Restarts any service that ended without being killed by us (a crash is a finding, not chaos). */
  const reviveDead = async () => {
    for (const name of SERVICES) {
      const svc = h.stack.service(name);
      if (svc.pid !== undefined && isAlive(svc.pid)) continue;
      const exitCode = await svc.kill('SIGKILL');
      unexpectedExits.push({ service: name, pid: svc.pid, exitCode, lastLines: svc.lines.slice(-5) });
      note(`${name} (pid ${svc.pid}) had exited on its own with ${exitCode}; restarting`);
      await startService(name);
    }
  };

  // --- clients: submit, retrying network errors, 5xx and 429 until the API answers 2xx ---------
  const accepted: Accepted[] = [];
  const rejected: { index: number; status: number; body: string }[] = [];
  const abandoned: number[] = [];
  let networkRetries = 0;
  let statusRetries = 0;
  /** Submissions on the wire right now; the gateway and Redis are killed while some are. */
  let inFlight = 0;
  const latencies: number[] = [];
  const submitDeadline = startedMs + SUBMIT_WINDOW_MS;
  let next = 0;

  const submit = async (p: Planned) => {
    const prompt = `chaos ${SEED} #${p.index} ${p.blocked ? 'a forbidden lighthouse' : 'a lighthouse'}`;
    const [path, json] =
      p.kind === 'video'
        ? ['/v1/videos', { model: 'motion-1', prompt, seconds: 1, size: '640x360', callback_url: callbackUrl }]
        : ['/v1/images/generations', { model: 'pixel-1', prompt, size: '256x256', callback_url: callbackUrl }];
    const headers: Record<string, string> = { authorization: `Bearer ${h.workspace.apiKey}`, 'content-type': 'application/json' };
    if (p.idempotencyKey) headers['idempotency-key'] = p.idempotencyKey;
    for (let tries = 1; ; tries++) {
      if (Date.now() > submitDeadline) {
        abandoned.push(p.index);
        return;
      }
      let waitMs = 100 + paceRng() * 300;
      const sentMs = Date.now();
      inFlight++;
      try {
        const res = await fetch(`${h.stack.baseUrl}${path}`, {
          method: 'POST',
          headers,
          body: JSON.stringify(json),
          signal: AbortSignal.timeout(15_000),
        }).finally(() => inFlight--);
        const text = await res.text();
        latencies.push(Date.now() - sentMs);
        if (res.status >= 200 && res.status < 300) {
          accepted.push({ id: (JSON.parse(text) as { id: string }).id, plan: p, tries, status: res.status });
          return;
        }
        if (res.status < 500 && res.status !== 429) {
          rejected.push({ index: p.index, status: res.status, body: text.slice(0, 300) });
          return;
        }
        statusRetries++;
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) waitMs = Math.min(retryAfter * 1000, 2_000);
      } catch {
        networkRetries++;
      }
      await pause(waitMs);
    }
  };

  const client = async () => {
    while (next < plan.length && Date.now() <= submitDeadline) {
      const p = plan[next++];
      await submit(p);
      // Pacing spreads the jobs over the window (about a job a second per client), so that kills land among them.
      await pause(500 + paceRng() * 600);
    }
    for (; next < plan.length; next++) abandoned.push(plan[next].index);
  };

  // --- chaos: a random SIGKILL + restart every 1-3 s; Redis killed and relaunched twice ---------
  // The gateway and Redis are killed while a submission is on the wire (when one comes within a
  // second), a few ms in: a kill between two writes of an intake is what the test is after, and a
  // kill into an idle gateway only refuses connections.
  let killsDuringSubmission = 0;
  const duringSubmission = async () => {
    const until = Date.now() + 1_000;
    while (inFlight === 0 && Date.now() < until && !stopChaos) await pause(5);
    if (inFlight > 0) {
      killsDuringSubmission++;
      await pause(chaosRng() * 8);
    }
  };
  let stopChaos = false;
  // Redis at the 2nd or 3rd and the 5th to 7th chaos step: both within the window of submissions.
  const redisAt = new Set([2 + Math.floor(chaosRng() * 2), 5 + Math.floor(chaosRng() * 3)]);
  const chaos = async () => {
    for (let iteration = 1; !stopChaos; iteration++) {
      await pause(1_000 + chaosRng() * 2_000);
      if (stopChaos) break;
      await reviveDead();
      if (redisAt.has(iteration)) {
        await duringSubmission();
        note('SIGKILL redis-server');
        await redis.kill();
        redisRestarts++;
        await pause(500 + chaosRng() * 1_500);
        await redis.launch();
        note('redis-server relaunched');
        continue;
      }
      const name = SERVICES[Math.floor(chaosRng() * SERVICES.length)];
      if (name === 'api-gateway') await duringSubmission();
      note(`SIGKILL ${name} (pid ${h.stack.service(name).pid})`);
      await h.stack.service(name).kill('SIGKILL');
      kills[name]++;
      await pause(chaosRng() * 500);
      await startService(name);
      note(`${name} restarted (pid ${h.stack.service(name).pid})`);
    }
  };

  const chaosDone = chaos();
  // Awaited below; this only keeps a chaos failure from being reported as unhandled meanwhile.
  chaosDone.catch(() => undefined);
  await Promise.all(Array.from({ length: CLIENTS }, client));
  // Both Redis restarts, and enough service kills, happen even if the submissions were quick.
  const serviceKills = () => Object.values(kills).reduce((a, b) => a + b, 0);
  while ((redisRestarts < redisAt.size || serviceKills() < MIN_SERVICE_KILLS) && Date.now() < startedMs + SUBMIT_WINDOW_MS + 30_000) await pause(250);
  stopChaos = true;
  await chaosDone;
  await reviveDead();
  const chaosEndedMs = Date.now();
  note('chaos stopped');

  // --- settle: every accepted job finished, every callback out of `pending` ---------------------
  const ids = accepted.map((a) => a.id);
  const settleDeadline = chaosEndedMs + SETTLE_MS;
  const callbackOf = async (job: JobRecord): Promise<CallbackRecord | undefined> =>
    h.callbacks.get(callbackIdFor(job.id, `${job.kind}.${job.status === 'completed' ? 'completed' : 'failed'}`));
  const unsettled = async (): Promise<string[]> => {
    const left: string[] = [];
    for (const id of ids) {
      const job = await h.stack.jobs.get(id);
      if (!job || !isFinished(job.status)) {
        left.push(id);
        continue;
      }
      const callback = await callbackOf(job);
      if (!callback || callback.state === 'pending' || !posts.some((p) => p.dataId === id)) left.push(id);
    }
    return left;
  };
  let left = await unsettled();
  while (left.length > 0 && Date.now() < settleDeadline) {
    await pause(500);
    left = await unsettled();
  }
  // Jobs that no client saw accepted (a retried submission whose first answer was lost) may still be
  // finishing; give them a short grace so that only records that never end are reported below.
  const storeIds = async () => [
    ...(await h.stack.redis.zrange(h.stack.keys.workspaceImages(h.workspace.workspaceId), 0, -1)),
    ...(await h.stack.redis.zrange(h.stack.keys.workspaceVideos(h.workspace.workspaceId), 0, -1)),
  ];
  const graceDeadline = Math.min(Date.now() + 10_000, settleDeadline + 10_000);
  for (;;) {
    const open = (await h.stack.jobs.getMany(await storeIds())).filter((j) => !isFinished(j.status));
    if (open.length === 0 || Date.now() > graceDeadline) break;
    await pause(500);
  }
  const settledMs = Date.now();

  // --- evaluate ---------------------------------------------------------------------------------
  const violations: Record<string, { job_id: string; why: string }[]> = {};
  const violate = (invariant: string, jobId: string, why: string) => (violations[invariant] ??= []).push({ job_id: jobId, why });
  const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
  const chargesOf = new Map<string, LedgerEntry[]>();
  for (const entry of ledger) chargesOf.set(entry.job_id, [...(chargesOf.get(entry.job_id) ?? []), entry]);
  const postsOf = new Map<string, Post[]>();
  for (const post of posts) postsOf.set(post.dataId, [...(postsOf.get(post.dataId) ?? []), post]);
  const generatorLines = processes.filter((p) => p.name === 'generator').flatMap((p) => p.process.lines);
  const finishLogs = new Map<string, string[]>();
  for (const line of generatorLines) {
    if ((line.message === 'job completed' || line.message === 'job failed') && typeof line.job_id === 'string') {
      finishLogs.set(line.job_id, [...(finishLogs.get(line.job_id) ?? []), String(line.message)]);
    }
  }

  const records = new Map<string, JobRecord>();
  for (const a of accepted) {
    const id = a.id;
    const job = await h.stack.jobs.get(id);
    if (job) records.set(id, job);
    if (!job || !isFinished(job.status)) {
      violate('1. every accepted job ends (completed or failed)', id, job ? `status ${job.status}` : 'no record in the store');
      continue;
    }
    const type = `${job.kind}.${job.status}`;
    const otherType = `${job.kind}.${job.status === 'completed' ? 'failed' : 'completed'}`;

    // Ends once: one finish written (the log line is at most once; a SIGKILL may eat it), one callback.
    const finishes = finishLogs.get(id) ?? [];
    if (finishes.length > 1) violate('2. every job ends once', id, `finish logged ${finishes.length} times: ${finishes.join(', ')}`);
    if (await h.callbacks.get(callbackIdFor(id, otherType as never))) {
      violate('2. every job ends once', id, `a ${otherType} callback exists besides the job's ${type}`);
    }

    const jobPosts = postsOf.get(id) ?? [];
    if (jobPosts.length === 0) violate('3. every accepted job is called back (>= 1 POST)', id, `final ${job.status}, no POST received`);
    const webhookIds = new Set(jobPosts.map((p) => p.webhookId));
    if (webhookIds.size > 1) violate('4. one webhook-id per job', id, `webhook-ids ${[...webhookIds].join(', ')}`);
    const expectedId = callbackIdFor(id, type as never);
    if (webhookIds.size === 1 && !webhookIds.has(expectedId))
      violate('4. one webhook-id per job', id, `webhook-id ${[...webhookIds][0]}, expected ${expectedId}`);
    const types = new Set(jobPosts.map((p) => p.type));
    if (types.size > 1 || (types.size === 1 && !types.has(type))) {
      violate('5. one event type per job, matching the final status', id, `final ${job.status}, callback types ${[...types].join(', ')}`);
    }
    const statuses = new Set(jobPosts.map((p) => p.dataStatus));
    if (jobPosts.length > 0 && (statuses.size > 1 || !statuses.has(job.status))) {
      violate('5. one event type per job, matching the final status', id, `final ${job.status}, data.status in callbacks ${[...statuses].join(', ')}`);
    }

    const charges = chargesOf.get(id) ?? [];
    if (charges.length > 1) violate('6. charged at most once', id, `${charges.length} ledger entries`);
    if (job.status !== 'completed' && charges.length > 0)
      violate('7. charged only if completed', id, `${job.status} (${job.error?.code}) with ${charges.length} charge(s)`);
    if (job.status === 'completed' && charges.length !== 1) violate('8. charged exactly once when completed', id, `${charges.length} ledger entries`);
    if (job.status === 'completed' && charges.length >= 1) {
      const callbackCosts = new Set(jobPosts.map((p) => p.dataCost));
      if (charges.some((c) => c.amount !== job.cost) || [...callbackCosts].some((c) => c !== job.cost)) {
        violate(
          '9. charge = job cost = callback cost',
          id,
          `job ${job.cost}, ledger ${charges.map((c) => c.amount).join(',')}, callbacks ${[...callbackCosts].join(',')}`,
        );
      }
    }

    if (a.plan.blocked && !(job.status === 'failed' && job.error?.code === 'moderation_blocked')) {
      violate('10. a blocked prompt fails with moderation_blocked', id, `status ${job.status}, error ${job.error?.code}`);
    }

    const callback = await h.callbacks.get(expectedId);
    if (!callback || callback.state !== 'delivered') {
      // The receiver fails at most two attempts per callback, so six attempts always reach a 2xx.
      violate(
        '11. the callback ends delivered (the ladder is not cut short)',
        id,
        callback ? `state ${callback.state}, attempt_count ${callback.attempt_count}, ladder ${callback.ladder_attempt}` : 'no callback record',
      );
    }
  }

  // Charges for jobs that never completed, whoever submitted them.
  for (const [jobId, charges] of chargesOf) {
    if (records.has(jobId)) continue;
    const job = await h.stack.jobs.get(jobId);
    if (charges.length > 1) violate('6. charged at most once', jobId, `${charges.length} ledger entries (job not accepted by a client)`);
    if (job?.status !== 'completed') violate('7. charged only if completed', jobId, `status ${job?.status} (job not accepted by a client)`);
  }

  // Records that no client saw accepted but that never end either (an intake cut short).
  const acceptedSet = new Set(ids);
  const allStoreIds = await storeIds();
  const unacceptedIds = allStoreIds.filter((id) => !acceptedSet.has(id));
  for (const job of await h.stack.jobs.getMany(allStoreIds)) {
    if (!isFinished(job.status))
      violate(
        '12. no job record is left unfinished (accepted or not)',
        job.id,
        `status ${job.status}, ${acceptedSet.has(job.id) ? 'accepted' : 'not accepted by a client'}`,
      );
  }

  if (unexpectedExits.length > 0) {
    for (const exit of unexpectedExits)
      violate('13. services exit only when killed', exit.service, `pid ${exit.pid} exit ${exit.exitCode}: ${JSON.stringify(exit.lastLines)}`);
  }
  if (rejected.length > 0) for (const r of rejected) violate('14. submissions are not rejected (4xx)', `#${r.index}`, `${r.status} ${r.body}`);

  // --- diagnostics ------------------------------------------------------------------------------
  const offenders = [
    ...new Set(
      Object.values(violations)
        .flat()
        .map((v) => v.job_id),
    ),
  ].filter((id) => /^(req|video)_/.test(id));
  const generation = new Queue('generation', { connection: h.stack.redis, prefix: bullPrefix(h.stack.prefix, 'generation') });
  const events = new Queue('job-events', { connection: h.stack.redis, prefix: bullPrefix(h.stack.prefix, 'job-events') });
  const diagnosis: Record<string, unknown> = {};
  try {
    for (const id of offenders.slice(0, 40)) {
      const job = await h.stack.jobs.get(id);
      const genJob = await generation.getJob(id);
      const eventJob = await events.getJob(`finished.${id}`);
      const messageIds = ['completed', 'failed'].map((o) => callbackIdFor(id, `${job?.kind ?? (id.startsWith('video_') ? 'video' : 'image')}.${o}` as never));
      const callbacks = [];
      for (const messageId of messageIds) {
        const cb = await h.callbacks.get(messageId);
        if (cb)
          callbacks.push({ ...cb, attempts: (await h.callbacks.attempts(messageId)).map((a) => `${a.trigger}#${a.ladder_attempt} ${a.status ?? a.error}`) });
      }
      diagnosis[id] = {
        record: job && { status: job.status, error: job.error, created_ms: job.created_ms, finished_ms: job.finished_ms, cost: job.cost },
        accepted: accepted.find((a) => a.id === id),
        generation_queue: genJob
          ? {
              state: await genJob.getState(),
              attemptsMade: genJob.attemptsMade,
              stalledCounter: (genJob as unknown as { stalledCounter?: number }).stalledCounter,
              failedReason: genJob.failedReason,
            }
          : 'no BullMQ job',
        job_events_queue: eventJob
          ? { state: await eventJob.getState(), attemptsMade: eventJob.attemptsMade, failedReason: eventJob.failedReason }
          : 'no BullMQ job',
        callbacks,
        posts: (postsOf.get(id) ?? []).map((p) => `${p.webhookId} ${p.type} ${p.dataStatus} -> ${p.reply} @${p.receivedMs - startedMs}ms`),
        ledger: chargesOf.get(id) ?? [],
        logs: processes.flatMap(({ name, process }) =>
          process.lines
            .filter((l) => l.job_id === id || messageIds.includes(String(l.message_id)))
            .map(
              (l) =>
                `${name}[${process.pid}] ${String(l.timestamp ?? '')} ${String(l.level ?? '')} ${String(l.message)} ${JSON.stringify({ ...l, message: undefined, timestamp: undefined, level: undefined, service: undefined })}`,
            ),
        ),
      };
    }
  } finally {
    await generation.close();
    await events.close();
  }

  const delivered2xx = new Map<string, number>();
  let duplicates = 0;
  for (const post of posts) {
    if ((delivered2xx.get(post.webhookId) ?? 0) > 0) duplicates++;
    if (post.reply < 300) delivered2xx.set(post.webhookId, (delivered2xx.get(post.webhookId) ?? 0) + 1);
  }
  const finalRecords = [...records.values()];
  const summary = {
    seed: SEED,
    planned: plan.length,
    accepted: accepted.length,
    accepted_by_kind: { image: accepted.filter((a) => a.plan.kind === 'image').length, video: accepted.filter((a) => a.plan.kind === 'video').length },
    outcomes: {
      completed: finalRecords.filter((j) => j.status === 'completed').length,
      failed: finalRecords.filter((j) => j.status === 'failed').length,
      unfinished: ids.length - finalRecords.filter((j) => isFinished(j.status)).length,
      failed_codes: countBy(finalRecords.filter((j) => j.status === 'failed').map((j) => j.error?.code ?? 'none')),
    },
    abandoned_submissions: abandoned.length,
    rejected_submissions: rejected.length,
    submission_retries: { network: networkRetries, status_5xx_429: statusRetries },
    store_jobs_not_accepted_by_a_client: unacceptedIds.length,
    kills,
    redis_restarts: redisRestarts,
    gateway_or_redis_kills_during_a_submission: killsDuringSubmission,
    submission_latency_ms: { p50: percentile(latencies, 0.5), p90: percentile(latencies, 0.9) },
    unexpected_exits: unexpectedExits.length,
    callback_posts: posts.length,
    posts_answered_500: posts.filter((p) => p.reply >= 500).length,
    duplicate_posts_after_a_2xx: duplicates,
    ledger_entries: ledger.length,
    seconds: {
      chaos: Math.round((chaosEndedMs - startedMs) / 1000),
      settle: Math.round((settledMs - chaosEndedMs) / 1000),
    },
    violations: Object.fromEntries(Object.entries(violations).map(([k, v]) => [k, v.length])),
  };
  const dump = join(tmpdir(), `chaos-${SEED}-${Date.now()}.json`);
  writeFileSync(dump, JSON.stringify({ summary, violations, diagnosis, chaosLog }, null, 2));
  console.log(`chaos summary (details in ${dump}):\n${JSON.stringify(summary, null, 2)}`);
  if (Object.keys(violations).length > 0) {
    console.log(`chaos violations:\n${JSON.stringify(violations, null, 2).slice(0, 20_000)}`);
  }

  // Enough happened for the run to mean something. Submissions stop when the window closes, and on a
  // loaded machine each restart takes longer, so fewer of the plan go out: the
  // bar is that half did, not a share that measures the machine.
  expect(accepted.length).toBeGreaterThan(JOB_COUNT * 0.5);
  expect(redisRestarts).toBeGreaterThanOrEqual(1);
  expect(Object.values(kills).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(5);
  expect(violations).toEqual({});
}, 240_000);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}
