import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { api, eventually, keysUnder, type BlobStoreKind } from '../support/stack';
import { TestRedisCluster } from '../support/redis-cluster';
import { DispatcherHarness } from '../dispatcher/support/harness';

/**
 * Retention through the whole stack: N jobs of every kind, each with a delivered signed callback,
 * then retention with a period of seconds. Afterwards the store holds what it held before (plus the
 * one ledger that keeps every charge, and keys that expire by themselves), and the blob store holds
 * nothing of those jobs. Run on a single Redis with both blob stores, and on a three-primary cluster.
 *
 * The figures (keys and bytes per job while kept and after retention) are printed for the README.
 */

const SHAPES: { redis: 'single' | 'cluster'; blobStore: BlobStoreKind }[] = [
  { redis: 'single', blobStore: 'fs' },
  { redis: 'single', blobStore: 's3' },
  { redis: 'cluster', blobStore: 'fs' },
];

/** Jobs per kind; every kind ends with a callback except the synchronous images. */
const IMAGES = 16;
const VIDEOS = 3;
const FAILURES = 3;
const SYNC = 3;
const JOBS = IMAGES + VIDEOS + FAILURES + SYNC;

interface Footprint {
  /** Store keys (the `{store}` tag), each with its memory; keys with a TTL are listed apart. */
  store: Map<string, number>;
  expiring: Map<string, number>;
  /** BullMQ's keys of the queues (their job history is bounded by the catalogue's removeOn* options). */
  queueKeys: number;
  queueBytes: number;
}

describe.each(SHAPES)('retention soak: $redis Redis, media on $blobStore', ({ redis, blobStore }) => {
  let cluster: TestRedisCluster | undefined;
  let h: DispatcherHarness;

  beforeAll(async () => {
    if (redis === 'cluster') cluster = await TestRedisCluster.start();
    h = await DispatcherHarness.start(
      // Jobs kept 12 s after they end and callbacks 12 s after their last attempt (long enough that
      // all of them are still there when the last callback is recorded, on a busy machine too), a
      // sweep every second.
      { MEDIA_RETENTION_SECONDS: '12', CALLBACK_RETENTION_SECONDS: '12', RETENTION_SWEEP_INTERVAL_SECONDS: '1', GENERATOR_CONCURRENCY: '4' },
      { blobStore, redisCluster: cluster, inProcess: true },
    );
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
    await cluster?.destroy();
  });

  async function footprint(): Promise<Footprint> {
    const result: Footprint = { store: new Map(), expiring: new Map(), queueKeys: 0, queueBytes: 0 };
    for (const { node, key } of await keysUnder(h.stack.redis, h.stack.prefix)) {
      const [bytes, ttl] = await Promise.all([node.memory('USAGE', key) as Promise<number | null>, node.pttl(key)]);
      if (bytes === null) continue; // gone between the scan and the read
      if (key.includes(':bull:')) {
        result.queueKeys++;
        result.queueBytes += bytes;
      } else {
        (ttl >= 0 ? result.expiring : result.store).set(key, bytes);
      }
    }
    return result;
  }

  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

  /** Blobs the workspace has in the blob store. */
  async function blobsOfWorkspace(): Promise<number> {
    if (blobStore === 's3') {
      // s3rver lets an unsigned listing through; a refusal must fail the test, not count as empty.
      const res = await fetch(`${h.stack.s3!.endpoint}/${h.stack.s3!.bucket}?list-type=2&prefix=${h.workspace.workspaceId}/`);
      expect(res.status).toBe(200);
      return (await res.text()).split('<Key>').length - 1;
    }
    const dir = join(h.stack.mediaDir, h.workspace.workspaceId);
    return (await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])).filter((e) => e.isFile()).length;
  }

  it(`removes ${JOBS} jobs with their media and callbacks after retention, back to the baseline`, async () => {
    const baseline = await footprint();

    const started = Date.now();
    const ids: string[] = [];
    const call = api(h.stack, h.workspace.apiKey);
    const withKey = async (i: number) => {
      const res = await call('/v1/images/generations', {
        method: 'POST',
        headers: { 'idempotency-key': `soak-${i}` },
        json: { model: 'pixel-1', prompt: `a lighthouse at dusk ${i}`, size: '256x256', callback_url: h.receiver.url('/image') },
      });
      expect(res.status).toBe(202);
      return res.json.id as string;
    };
    ids.push(...(await Promise.all(Array.from({ length: IMAGES }, (_, i) => (i % 2 === 0 ? withKey(i) : h.jobs.image(h.receiver.url('/image')))))));
    ids.push(...(await Promise.all(Array.from({ length: VIDEOS }, () => h.jobs.video(h.receiver.url('/video'))))));
    ids.push(...(await Promise.all(Array.from({ length: FAILURES }, () => h.jobs.image(h.receiver.url('/failed'), 'something forbidden')))));
    ids.push(...(await Promise.all(Array.from({ length: SYNC }, () => h.jobs.syncImage()))));
    expect(new Set(ids).size).toBe(JOBS);

    // Every callback arrives, signed, and says when its job's media will be removed.
    const deliveries = await eventually(
      () => {
        const got = h.receiver.requests;
        return got.length >= JOBS - SYNC ? [...got] : undefined;
      },
      90_000,
      'every callback',
    );
    const webhook = new Webhook(h.workspace.signingSecret);
    // Links never outlive the media they point at (removed 12 s after the job ended). A callback still
    // pending by then holds its job and media for longer (its links may then last their full TTL), and
    // the store would not return to its baseline below: the delay is named so that the cause shows.
    const outliving = deliveries.flatMap((delivery) => {
      const { data } = webhook.verify(delivery.body, delivery.headers) as { data: { completed_at: number | null; url_expires_at: number | null } };
      if (data.url_expires_at === null || data.url_expires_at <= data.completed_at! + 13) return [];
      return [
        {
          path: delivery.path,
          delivered_seconds_after_completion: Math.round(delivery.receivedMs / 1000 - data.completed_at!),
          url_expires_at: data.url_expires_at,
        },
      ];
    });
    expect(outliving).toEqual([]);
    // Every attempt recorded (the dispatcher writes it just after the receiver answered).
    await eventually(
      async () => {
        const delivered = await call('/v1/callbacks?status=delivered&limit=100');
        return delivered.json.data.length === JOBS - SYNC ? true : undefined;
      },
      30_000,
      'every callback recorded as delivered',
    );
    const kept = await footprint();
    const video = await h.jobs.get(ids[IMAGES]);
    expect(video.expires_at).toBeGreaterThanOrEqual(video.completed_at);
    expect(video.expires_at).toBeLessThanOrEqual(video.completed_at + 13);
    expect(await blobsOfWorkspace()).toBeGreaterThanOrEqual(IMAGES + VIDEOS);

    // Retention: every job, its media and its callback go; nothing is left but the baseline.
    // The one key the run adds for good is the workspace's ledger.
    const ledger = h.stack.keys.workspaceLedger(h.workspace.workspaceId);
    expect(baseline.store.has(ledger)).toBe(false);
    const after = await eventually(
      async () => {
        const now = await footprint();
        return now.store.size === baseline.store.size + 1 ? now : undefined;
      },
      60_000,
      'the store to return to its baseline',
      // A footprint reads every key of the stack (and scans the shared Redis for them): not 20 times a second.
      500,
    );
    expect([...after.store.keys()].sort()).toEqual([...baseline.store.keys(), ledger].sort());
    expect(await blobsOfWorkspace()).toBe(0);
    for (const id of ids) expect((await call(id.startsWith('video_') ? `/v1/videos/${id}` : `/v1/images/${id}`)).status).toBe(404);
    expect((await call('/v1/callbacks')).json.data).toEqual([]);
    // Charges are billing records: kept, one per completed job.
    expect((await h.stack.jobs.ledger(h.workspace.workspaceId)).length).toBe(JOBS - FAILURES);
    const ledgerGrowth = after.store.get(ledger)!;
    const storeDrift = sum(after.store) - sum(baseline.store) - ledgerGrowth;
    // A workspace record's counters may move by a few bytes; a job left behind would be ~1 KB.
    expect(Math.abs(storeDrift)).toBeLessThan(256);
    // What is left with a TTL expires by itself (rate-limit windows, nothing per job).
    expect(after.expiring.size).toBeLessThanOrEqual(kept.expiring.size);
    // An Idempotency-Key's claim went with its job: the same call makes a new job now.
    const again = await call('/v1/images/generations', {
      method: 'POST',
      headers: { 'idempotency-key': 'soak-0' },
      json: { model: 'pixel-1', prompt: 'a lighthouse at dusk 0', size: '256x256', callback_url: h.receiver.url('/image') },
    });
    expect(again.status).toBe(202);
    expect(ids).not.toContain(again.json.id);

    const perJob = (a: Footprint, b: Footprint) => ({
      keys: ((a.store.size - b.store.size) / JOBS).toFixed(1),
      bytes: Math.round((sum(a.store) - sum(b.store)) / JOBS),
    });
    console.log(
      JSON.stringify({
        soak: `${redis} Redis, ${blobStore}`,
        jobs: JOBS,
        seconds_to_baseline: Math.round((Date.now() - started) / 1000),
        while_kept_per_job: perJob(kept, baseline),
        after_retention_per_job: perJob(after, baseline),
        ledger_bytes_per_charge: Math.round(ledgerGrowth / (JOBS - FAILURES)),
        queue_keys: { baseline: baseline.queueKeys, kept: kept.queueKeys, after: after.queueKeys },
        queue_bytes: { baseline: baseline.queueBytes, kept: kept.queueBytes, after: after.queueBytes },
      }),
    );
  }, 240_000);
});
