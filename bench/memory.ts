/**
 * Redis memory per pending callback, through the whole stack: image jobs with a callback_url to a
 * receiver path that answers 500, a retry schedule of hours (so after attempt 1 nothing else
 * happens), until every callback has had attempt 1 and has attempt 2 waiting on the deliveries
 * queue's schedule (or, before the schedule existed, as a delayed BullMQ job). Memory is the sum of `MEMORY USAGE <key> SAMPLES 0` over every key under the phase's prefix
 * (SCAN MATCH prefix:*), taken after a warm-up batch (so one-off keys such as queue metadata and the
 * workspace's index heads are in the baseline) and again after N more jobs; the difference over N is
 * the marginal cost of one more pending callback, broken down by key kind.
 */
import type { Redis } from 'ioredis';
import { bullKey, scheduleKey, storeShards } from '@media/common';
import type { QueueName } from '@media/queues';
import { BenchStack, createWorkspace, dropPrefix, envNumber, newPrefix, serviceEnv, sleep, submitImage, waitUntil, type BenchContext } from './support';
import { allKeys } from '../test/support/store-keys';

/**
 * What a kind of key belongs to: the job itself (record and indexes, needed with or without a
 * callback), the callback (its record, attempt log, indexes, and its two queues job-events and
 * callback-deliveries), the generation queue, billing, or anything else.
 */
export type KeyGroup = 'job' | 'callback' | 'generation queue' | 'billing' | 'bounded' | 'other';

export interface KindRow {
  kind: string;
  group: KeyGroup;
  /** Redis type and encoding of one key of the kind (after). */
  type: string;
  keysBefore: number;
  keysAfter: number;
  bytesBefore: number;
  bytesAfter: number;
  /** (after − before) / N */
  bytesPerCallback: number;
  /** One key of the kind (after), with the byte length of each hash field, or of the string. */
  sample: { key: string; fieldBytes?: Record<string, number>; stringBytes?: number };
}

export interface MemoryResult {
  jobs: number;
  warmup: number;
  retrySchedule: string;
  /** Everything under the prefix, per pending callback. */
  everythingBytes: number;
  /** Everything minus job records and job indexes. */
  callbackOnlyBytes: number;
  /**
   * The headline: only the callback's own keys (record, attempt log, indexes) and what it keeps in
   * its two queues (job-events, callback-deliveries, the deliveries schedule), without their capped
   * event streams.
   */
  callbackMachineryBytes: number;
  kinds: KindRow[];
  /** The Redis settings that decide compact (listpack) versus full encodings. */
  encodingLimits: Record<string, string>;
}

/** BullMQ's per-queue structures (anything else under `bull:<queue>:` is one job's hash or its sub-keys). */
const BULL_STRUCTURES = new Set([
  'wait',
  'paused',
  'active',
  'delayed',
  'prioritized',
  'completed',
  'failed',
  'stalled',
  'stalled-check',
  'events',
  'meta',
  'id',
  'marker',
  'limiter',
  'pc',
  'repeat',
  'metrics',
  'waiting-children',
  'de',
]);

/** The kind of one key, from its name under the prefix. */
export function classify(prefix: string, key: string): { kind: string; group: KeyGroup } {
  // The hash tags of the layout (`{store}`, `{queue:<name>}`: keyspace.ts) say nothing about the
  // kind; they go before the name is split, as a tag may hold a colon itself.
  const parts = key
    .slice(prefix.length + 1)
    .replace(/\{[^{}]*\}:?/g, '')
    .split(':')
    .filter((part) => part !== '');
  if (parts[0] === 'bull') {
    const queue = parts[1] ?? '?';
    const tail = parts.slice(2);
    const group: KeyGroup = queue === 'generation' ? 'generation queue' : 'callback';
    // BullMQ caps each queue's event stream (maxLenEvents, 10,000 entries): a fixed cost, whatever
    // the number of callbacks, that a run of a few thousand would otherwise spread over each one.
    if (tail[0] === 'events') return { kind: `BullMQ ${queue}: events (capped stream)`, group: 'bounded' };
    if (tail.length >= 1 && BULL_STRUCTURES.has(tail[0])) return { kind: `BullMQ ${queue}: ${tail[0]}`, group };
    if (tail.length >= 2) return { kind: `BullMQ ${queue}: job ${tail.slice(1).join(':')}`, group };
    return { kind: `BullMQ ${queue}: job hashes`, group };
  }
  if (parts[0] === 'schedule') return { kind: `schedule ${parts[1] ?? '?'}`, group: 'callback' };
  if (parts[0] === 'job') return { kind: 'job record', group: 'job' };
  if (parts[0] === 'intake') return { kind: 'job index: intake', group: 'job' };
  if (parts[0] === 'charged') return { kind: 'billing: charged set', group: 'billing' };
  if (parts[0] === 'cb') return { kind: parts.length >= 3 ? `callback ${parts.slice(2).join(':')} log` : 'callback record', group: 'callback' };
  if (parts[0] === 'ws' && parts.length >= 3) {
    const sub = parts.slice(2);
    if (sub[0] === 'images' || sub[0] === 'videos' || sub[0] === 'unfinished') return { kind: `job index: ws ${sub[0]}`, group: 'job' };
    if (sub[0] === 'callbacks') {
      const name = sub.length === 1 ? 'ws callbacks' : sub[1] === 'state' ? `ws callbacks state ${sub[2]}` : `ws callbacks ${sub[1]}`;
      return { kind: `callback index: ${name}`, group: 'callback' };
    }
    if (sub[0] === 'ledger') return { kind: 'billing: ws ledger', group: 'billing' };
    return { kind: `workspace: ${sub[0]}`, group: 'other' };
  }
  return { kind: parts[0] === 'ws' ? 'workspace record' : `other: ${parts[0]}`, group: 'other' };
}

interface Snapshot {
  byKind: Map<string, { keys: number; bytes: number; sample: string; group: KeyGroup }>;
  total: number;
}

/** Sum of MEMORY USAGE (all nested values sampled) over every key under `prefix:`, by kind. */
async function snapshot(redis: Redis, prefix: string): Promise<Snapshot> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const byKind: Snapshot['byKind'] = new Map();
  let total = 0;
  for (let i = 0; i < keys.length; i += 500) {
    const batch = keys.slice(i, i + 500);
    const pipeline = redis.pipeline();
    for (const key of batch) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    const replies = (await pipeline.exec()) ?? [];
    batch.forEach((key, j) => {
      const [err, bytes] = replies[j] ?? [null, 0];
      // A key that expired between SCAN and MEMORY USAGE answers nil.
      const size = err || bytes === null ? 0 : Number(bytes);
      const { kind, group } = classify(prefix, key);
      const entry = byKind.get(kind) ?? { keys: 0, bytes: 0, sample: key, group };
      entry.keys++;
      entry.bytes += size;
      byKind.set(kind, entry);
      total += size;
    });
  }
  return { byKind, total };
}

export async function benchMemory(ctx: BenchContext): Promise<MemoryResult> {
  const N = Math.max(1, envNumber('BENCH_MEMORY_JOBS', 1000));
  const WARMUP = Math.max(1, envNumber('BENCH_MEMORY_WARMUP', 20));
  const SCHEDULE = '1h,1h,1h,1h,1h';
  const { redis, receiver, pki } = ctx;

  const prefix = newPrefix('memory');
  const { workspaceId, apiKey } = await createWorkspace(redis, prefix);
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway', 'generator', 'webhook-dispatcher'],
    await serviceEnv(prefix, pki, {
      RATE_LIMIT_CREATE_PER_MINUTE: '100000000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '100000000',
      WEBHOOK_RETRY_SCHEDULE: SCHEDULE,
    }),
  );
  const body = JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: receiver.url('/fail') });
  const submit = async (count: number) => {
    let issued = 0;
    const worker = async () => {
      while (issued < count) {
        issued++;
        await submitImage(stack.baseUrl, apiKey, body);
      }
    };
    await Promise.all(Array.from({ length: Math.min(10, count) }, worker));
  };
  const bull = (queue: QueueName, what: string) => bullKey(prefix, queue, what);
  /** Every callback has had attempt 1 and waits for attempt 2: all queues idle, `total` deliveries delayed. */
  const settled = async (total: number) => {
    stack.assertAlive();
    const replies = (await redis
      .pipeline()
      .zcard(bull('callback-deliveries', 'delayed'))
      .llen(bull('generation', 'wait'))
      .llen(bull('generation', 'active'))
      .zcard(bull('generation', 'prioritized'))
      .llen(bull('job-events', 'wait'))
      .llen(bull('job-events', 'active'))
      .llen(bull('callback-deliveries', 'wait'))
      .llen(bull('callback-deliveries', 'active'))
      .exec())!.map(([, v]) => Number(v));
    const scheduled = await Promise.all(storeShards(prefix).map((shard) => redis.zcard(scheduleKey(prefix, 'callback-deliveries', shard))));
    return replies[0] + scheduled.reduce((a, b) => a + b, 0) >= total && replies.slice(1).every((v) => v === 0);
  };

  try {
    await submit(WARMUP);
    await waitUntil(() => settled(WARMUP), 120_000, `${WARMUP} warm-up callbacks pending`, 200);
    await sleep(1_500);
    const before = await snapshot(redis, prefix);

    await submit(N);
    await waitUntil(() => settled(WARMUP + N), 240_000, `${N} callbacks pending with attempt 2 delayed`, 200);
    // Batched bookkeeping (e.g. intake marks) may land just after the last attempt.
    await sleep(1_500);
    const after = await snapshot(redis, prefix);
    await checkCallbacks(redis, prefix, workspaceId, WARMUP + N);

    const kinds: KindRow[] = [];
    for (const kind of new Set([...before.byKind.keys(), ...after.byKind.keys()])) {
      const b = before.byKind.get(kind);
      const a = after.byKind.get(kind);
      const sample = (a ?? b)!;
      let type = 'gone';
      const described: KindRow['sample'] = { key: sample.sample.slice(prefix.length + 1) };
      try {
        const [t, enc] = await Promise.all([redis.type(sample.sample), redis.object('ENCODING', sample.sample)]);
        if (t !== 'none') type = `${t}/${String(enc)}`;
        if (t === 'hash') {
          const fields = await redis.hgetallBuffer(sample.sample);
          described.fieldBytes = Object.fromEntries(Object.entries(fields).map(([f, v]) => [f, v.length]));
        } else if (t === 'string') {
          described.stringBytes = await redis.strlen(sample.sample);
        }
      } catch {
        // expired meanwhile
      }
      kinds.push({
        kind,
        group: sample.group,
        type,
        keysBefore: b?.keys ?? 0,
        keysAfter: a?.keys ?? 0,
        bytesBefore: b?.bytes ?? 0,
        bytesAfter: a?.bytes ?? 0,
        bytesPerCallback: ((a?.bytes ?? 0) - (b?.bytes ?? 0)) / N,
        sample: described,
      });
    }
    kinds.sort((x, y) => y.bytesPerCallback - x.bytesPerCallback);
    const perCallback = (rows: KindRow[]) => rows.reduce((sum, r) => sum + r.bytesPerCallback, 0);
    return {
      jobs: N,
      warmup: WARMUP,
      retrySchedule: SCHEDULE,
      everythingBytes: (after.total - before.total) / N,
      callbackOnlyBytes: perCallback(kinds.filter((r) => r.group !== 'job')),
      callbackMachineryBytes: perCallback(kinds.filter((r) => r.group === 'callback')),
      kinds,
      encodingLimits: await encodingLimits(redis),
    };
  } finally {
    await stack.stop();
    await dropPrefix(redis, prefix);
  }
}

/** Every callback is pending after exactly one failed automatic attempt, with the next one scheduled. */
async function checkCallbacks(redis: Redis, prefix: string, workspaceId: string, expected: number): Promise<void> {
  const keys = allKeys(prefix);
  const ids = await redis.zrange(keys.workspaceCallbacks(workspaceId), 0, -1);
  if (ids.length !== expected) throw new Error(`expected ${expected} callbacks, found ${ids.length}`);
  for (let i = 0; i < ids.length; i += 500) {
    const raws = await redis.mget(ids.slice(i, i + 500).map((id) => keys.callback(id)));
    for (const raw of raws) {
      const cb = JSON.parse(raw ?? 'null') as { state: string; attempt_count: number; ladder_attempt: number; next_attempt_ms: number | null } | null;
      if (!cb || cb.state !== 'pending' || cb.attempt_count !== 1 || cb.ladder_attempt !== 1 || cb.next_attempt_ms === null) {
        throw new Error(`a callback is not pending after one attempt: ${raw}`);
      }
    }
  }
}

/** hash/zset/list listpack limits (CONFIG GET), or nothing when the server refuses CONFIG. */
async function encodingLimits(redis: Redis): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const pattern of ['hash-max-listpack-*', 'zset-max-listpack-*']) {
    try {
      const flat = (await redis.config('GET', pattern)) as string[];
      for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]] = flat[i + 1];
    } catch {
      // CONFIG may be disabled (managed Redis)
    }
  }
  return out;
}
