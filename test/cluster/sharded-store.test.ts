import { loadConfig } from '@media/common';
import { FailureCounter, hashApiKey, mint, SessionRepository, SIGN_IN_LIMITS, WorkspaceAccounts, WorkspaceRepository } from '@media/accounts';
import { callbackIdFor, type ImageJob, LEGACY_SHARD, newId, newIdBeside, shardOfId, STORE_SHARDS } from '@media/domain';
import { JobRepository } from '@media/jobs';
import { SecretBox } from '@media/storage';
import { asyncImage } from '../../libs/domain/src/test-support/jobs';
import { eventually, type TestWorkspace } from '../support/stack';
import { TestRedisCluster } from '../support/redis-cluster';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { JobClient } from '../dispatcher/support/jobs';

/**
 * The store split by workspace on a real three-primary cluster: many workspaces, one or more on
 * every shard, each job and callback stored beside its workspace; the per-shard sets walked by
 * their sweepers on every shard (the ladder's schedule, the intake repair, retention); and a
 * workspace written before the split, whose ids name no shard, served where it always was.
 */
describe('a store spread over a cluster by workspace', () => {
  let cluster: TestRedisCluster;
  let h: DispatcherHarness;
  /** One workspace per shard, and one written under the old layout (last). */
  const workspaces: TestWorkspace[] = [];

  beforeAll(async () => {
    cluster = await TestRedisCluster.start();
    // Attempt 1 of every callback fails, so attempt 2 waits in its shard's schedule; media and
    // callbacks are kept seconds, so retention sweeps every shard within the test.
    h = await DispatcherHarness.start(
      { WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s', MEDIA_RETENTION_SECONDS: '6', CALLBACK_RETENTION_SECONDS: '3', RETENTION_SWEEP_INTERVAL_SECONDS: '1' },
      { redisCluster: cluster, inProcess: true },
    );
    const byShard = new Map<number, TestWorkspace>([[shardOfId(h.workspace.workspaceId), h.workspace]]);
    // Workspaces made as the stack makes them, but with a cheap scrypt for their owners' passwords,
    // which nothing here signs in with: about fifty are made, at tens of milliseconds each otherwise.
    const accounts = new WorkspaceAccounts({
      workspaces: h.stack.workspaces,
      sessions: new SessionRepository(h.stack.redis, h.stack.keys),
      failures: new FailureCounter(h.stack.redis, h.stack.keys, SIGN_IN_LIMITS),
      rotationOverlapSeconds: 86_400,
      audit: h.stack.accounts.audit,
      scrypt: { N: 2 ** 10, r: 8, p: 1, keylen: 32 },
    });
    // Shards are drawn at random: make workspaces until every shard has one (about 50 draws).
    for (let i = 0; byShard.size < STORE_SHARDS; i++) {
      if (i > 1_000) throw new Error('workspace shards are not drawn over all shards');
      const { workspace, apiKey, signingSecret, owner } = await accounts.createWorkspace(`ws${i}`, `owner@ws${i}.test`);
      const ws: TestWorkspace = { workspaceId: workspace.id, apiKey, signingSecret, owner };
      if (!byShard.has(shardOfId(ws.workspaceId))) byShard.set(shardOfId(ws.workspaceId), ws);
    }
    workspaces.push(...[...byShard.entries()].sort(([a], [b]) => a - b).map(([, ws]) => ws));
    workspaces.push(await legacyWorkspace());
  }, 180_000);

  afterAll(async () => {
    await h?.stop();
    await cluster?.destroy();
  });

  /** A workspace as the store held it before the split: an id of the old form, its records under `{store}`. */
  async function legacyWorkspace(): Promise<TestWorkspace> {
    const config = loadConfig(h.stack.env);
    const repository = new WorkspaceRepository(h.stack.redis, h.stack.keys, SecretBox.of(config.secretsEncryptionKeys));
    const now = Date.now();
    const id = newId('ws');
    const key = mint.apiKey();
    const signingSecret = mint.signingSecret();
    await repository.insert(
      { id, name: 'written before the split', created_ms: now },
      { id: key.id, hash: hashApiKey(key.key), prefix: key.prefix, created_ms: now },
      { secret: signingSecret, created_ms: now, expires_ms: 0 },
      { email: 'owner@legacy.test', role: 'owner', password_hash: 'unused', session_epoch: 'e1' },
    );
    expect(await h.stack.redis.exists(`${h.stack.prefix}:{store}:ws:${id}`)).toBe(1);
    return { workspaceId: id, apiKey: key.key, signingSecret, owner: { email: 'owner@legacy.test', password: 'unused' } };
  }

  it('runs every workspace on its own shard, calls each back after a scheduled retry, and sweeps every shard', async () => {
    const submitted = await Promise.all(
      workspaces.map(async (ws, i) => {
        h.receiver.script(`/ws${i}`, (n) => ({ status: n === 1 ? 503 : 200 }));
        const jobId = await new JobClient(h.stack, ws.apiKey).image(h.receiver.url(`/ws${i}`));
        return { ws, jobId };
      }),
    );
    for (const { ws, jobId } of submitted) expect(shardOfId(jobId)).toBe(shardOfId(ws.workspaceId));
    expect(new Set(submitted.map(({ jobId }) => shardOfId(jobId))).size).toBe(STORE_SHARDS + 1);
    expect(shardOfId(submitted.at(-1)!.jobId)).toBe(LEGACY_SHARD);

    for (const { jobId } of submitted) {
      const messageId = await h.messageIdOf(jobId);
      expect(shardOfId(messageId)).toBe(shardOfId(jobId));
      // Attempt 2 came from the shard's schedule, promoted by the dispatcher's walk over all of them.
      const { attempts } = await h.settled(messageId, ['delivered'], 60_000);
      expect(attempts.map((a) => a.status)).toEqual([503, 200]);
    }
    // The `media_callbacks{status}` gauge counts over every workspace, hence every shard and primary.
    expect((await h.callbacks.countByState()).delivered).toBeGreaterThanOrEqual(workspaces.length);

    // Retention: every shard's jobs and callbacks go once their time is up.
    await eventually(
      async () => {
        const left = await Promise.all(
          submitted.map(async ({ jobId }) => (await h.stack.jobs.get(jobId)) ?? (await h.callbacks.get(callbackIdFor(jobId, 'image.completed')))),
        );
        return left.every((record) => record === undefined) ? true : undefined;
      },
      60_000,
      'every shard swept',
    );
    const leftInSets = await Promise.all(
      h.stack.keys.shards.flatMap((shard) =>
        [h.stack.keys.jobExpiry(shard), h.stack.keys.endedCallbacks(shard), h.stack.keys.intake(shard)].map((key) => h.stack.redis.zcard(key)),
      ),
    );
    expect(leftInSets.every((n) => n === 0)).toBe(true);
  }, 240_000);

  it('repairs the intake on every shard: a stored job no gateway queued is run', async () => {
    const jobs = new JobRepository(h.stack.redis, h.stack.keys);
    const stored = await Promise.all(
      [workspaces[0]!, workspaces[STORE_SHARDS - 1]!, workspaces.at(-1)!].map(async (ws) => {
        const job: ImageJob = {
          ...asyncImage,
          id: newIdBeside(ws.workspaceId, 'req'),
          workspace_id: ws.workspaceId,
          status: 'queued',
          created_ms: Date.now(),
          callback_url: null,
        };
        expect(await jobs.create(job)).toBe(true);
        return job.id;
      }),
    );
    for (const id of stored) {
      await eventually(async () => ((await jobs.get(id))?.status === 'completed' ? true : undefined), 60_000, `job ${id} repaired and run`);
    }
  }, 120_000);

  it('spreads the store over the primaries', async () => {
    const nodes = cluster.nodeClients();
    try {
      const shardKeysPerNode = await Promise.all(
        nodes.map(async (node) => (await node.scan('0', 'MATCH', `${h.stack.prefix}:{s[0-9a-f]*`, 'COUNT', 100_000))[1].length),
      );
      expect(shardKeysPerNode.filter((n) => n > 0)).toHaveLength(3);
    } finally {
      nodes.forEach((node) => node.disconnect());
    }
  });
});
