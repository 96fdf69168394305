import { Webhook } from 'standardwebhooks';
import { bullKey } from '@media/common';
import { jobIds } from '@media/queues';
import { callbackIdFor, LEGACY_SHARD, newIdBeside, shardOfId, STORE_SHARDS } from '@media/domain';
import { destinationOf } from '@media/callbacks';
import { api, BLOB_STORES, eventually } from '../support/stack';
import { TestRedisCluster } from '../support/redis-cluster';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { JobClient } from '../dispatcher/support/jobs';
import { TestReceiver } from '../dispatcher/support/receiver';

/**
 * The whole stack on a real three-primary Redis Cluster: the same services, only
 * REDIS_CLUSTER_NODES instead of REDIS_URL. Every script and MULTI of the store and of BullMQ must
 * keep its keys in one slot here, or Redis answers CROSSSLOT and the path under test fails.
 */
describe.each(BLOB_STORES)('the stack on Redis Cluster, media on %s', (blobStore) => {
  let cluster: TestRedisCluster;
  let h: DispatcherHarness;

  beforeAll(async () => {
    cluster = await TestRedisCluster.start();
    // Long gaps: attempt 2 of the ladder is certainly still waiting when the manual retry is made.
    // A low destination cap, so that attempts are deferred and woken through the cluster too.
    h = await DispatcherHarness.start(
      { WEBHOOK_RETRY_SCHEDULE: '10m,10m,10m,10m,10m', CALLBACK_DESTINATION_MAX_IN_FLIGHT: '2' },
      { redisCluster: cluster, blobStore, inProcess: true },
    );
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
    await cluster?.destroy();
  });

  const slotOf = (key: string) => h.stack.redis.cluster('KEYSLOT', key) as Promise<number>;

  /** The first delivery to `path`, once it has arrived. */
  const firstDelivery = (path: string) => eventually(() => h.receiver.requestsTo(path)[0], 30_000, `a callback to ${path}`);

  it('runs an async image with a signed callback whose link downloads the image', async () => {
    const jobId = await h.jobs.image(h.receiver.url('/image'));
    const request = await firstDelivery('/image');
    const envelope = new Webhook(h.workspace.signingSecret).verify(request.body, request.headers) as any;
    expect(envelope).toMatchObject({ type: 'image.completed', data: { id: jobId, status: 'completed' } });
    const download = await fetch(envelope.data.data[0].url);
    expect(download.status).toBe(200);
    expect(
      Buffer.from(await download.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    const messageId = await h.messageIdOf(jobId);
    expect((await h.settled(messageId, ['delivered'])).callback.attempt_count).toBe(1);
  });

  it('answers a synchronous image (the gateway waits on pub/sub through the cluster)', async () => {
    const res = await api(h.stack, h.workspace.apiKey)('/v1/images/generations', {
      method: 'POST',
      json: { model: 'pixel-1', prompt: 'a quiet harbour', size: '256x256', response_format: 'b64_json' },
    });
    expect(res.status).toBe(200);
    expect(Buffer.from(res.json.data[0].b64_json, 'base64').subarray(1, 4).toString()).toBe('PNG');
  });

  it('makes a video, delivers video.completed, and serves the MP4', async () => {
    const videoId = await h.jobs.video(h.receiver.url('/video'));
    const request = await firstDelivery('/video');
    const envelope = new Webhook(h.workspace.signingSecret).verify(request.body, request.headers) as any;
    expect(envelope).toMatchObject({ type: 'video.completed', data: { id: videoId, status: 'completed' } });
    const content = await api(h.stack, h.workspace.apiKey)(`/v1/videos/${videoId}/content`);
    expect(content.status).toBe(200);
    expect(content.text.slice(4, 8)).toBe('ftyp');
  });

  it('fails a job uncharged and delivers image.failed', async () => {
    const jobId = await h.jobs.image(h.receiver.url('/failed'), 'something forbidden');
    const request = await firstDelivery('/failed');
    const envelope = new Webhook(h.workspace.signingSecret).verify(request.body, request.headers) as any;
    expect(envelope).toMatchObject({ type: 'image.failed', data: { id: jobId, status: 'failed', cost: null } });
    expect(envelope.data.error.code).toBe('moderation_blocked');
    const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
    expect(ledger.some((entry) => entry.job_id === jobId)).toBe(false);
  });

  it('schedules the ladder, and a manual retry delivers and cancels the scheduled attempt', async () => {
    h.receiver.script('/ladder', (n) => (n === 1 ? { status: 503 } : { status: 200 }));
    const jobId = await h.jobs.image(h.receiver.url('/ladder'));
    const messageId = await h.messageIdOf(jobId);
    await h.attempts(messageId, 1);
    const schedule = h.stack.keys.callbackSchedule(shardOfId(messageId));
    const second = jobIds.delivery(messageId, 2, 'scheduled');
    await eventually(async () => ((await h.stack.redis.zscore(schedule, second)) !== null ? true : undefined), 20_000, 'attempt 2 scheduled');

    const retried = await api(h.stack, h.workspace.apiKey)(`/v1/callbacks/${messageId}/retry`, { method: 'POST' });
    expect(retried.status).toBe(202);
    const { callback, attempts } = await h.settled(messageId, ['delivered']);
    expect(callback).toMatchObject({ attempt_count: 2, next_attempt_ms: null });
    expect(attempts.map((a) => a.trigger)).toEqual(['scheduled', 'manual']);
    expect(await h.stack.redis.zscore(schedule, second)).toBeNull();

    const listed = await api(h.stack, h.workspace.apiKey)('/v1/callbacks?status=delivered');
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((cb: { id: string }) => cb.id)).toContain(messageId);
  });

  it('keeps a slow destination to its cap, deferring the rest and making them as slots come back', async () => {
    const slow = await TestReceiver.start(h.pki);
    try {
      slow.script('/slow', () => ({ status: 200, afterMs: 600 }));
      const ids = await Promise.all(Array.from({ length: 6 }, () => h.jobs.image(slow.url('/slow'))));
      for (const id of ids) expect((await h.settled(await h.messageIdOf(id), ['delivered'])).callback.attempt_count).toBe(1);
      expect(slow.maxInFlight).toBeLessThanOrEqual(2);
      // Every key of a destination's slots and of its workspaces' shares is in one slot, so each of
      // its scripts runs on one node.
      const d = destinationOf(slow.url('/'));
      const k = h.stack.keys;
      const slots = await Promise.all(
        [
          k.destinationLeases(d.id),
          k.destinationParked(d.id),
          k.destinationState(d.id),
          k.destinationHolders(d.id),
          k.destinationShares(d.id),
          k.destinationLines(d.id),
          k.destinationTurns(d.id),
          k.destinations(k.destinationShard(d.id)),
        ].map(slotOf),
      );
      expect(new Set(slots).size).toBe(1);
      // The workspace's share there was kept on the cluster: its attempts went, and were accepted.
      expect(await h.stack.redis.hget(k.destinationShares(d.id), `d:${h.workspace.workspaceId}`)).not.toBeNull();
      const metrics = await (await fetch(`${h.stack.service('webhook-dispatcher').opsUrl}/metrics`)).text();
      expect(Number(/^media_callback_deferrals_total\{[^}]*\} (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    } finally {
      await slow.stop();
    }
  });

  it('signs with both secrets after a rotation made by the admin CLI', async () => {
    const ws = await h.stack.createWorkspace('rotation');
    const rotated = await h.admin(['rotate-secret', '--workspace', ws.workspaceId]);
    expect(rotated.code).toBe(0);
    const newSecret = JSON.parse(rotated.stdout).signing_secret as string;
    await new JobClient(h.stack, ws.apiKey).image(h.receiver.url('/rotated'));
    const request = await firstDelivery('/rotated');
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [newSecret, ws.signingSecret]) {
      expect(new Webhook(secret).verify(request.body, request.headers)).toMatchObject({ type: 'image.completed' });
    }
  });

  it('honours Idempotency-Key: the same key gives the first job, and one job only', async () => {
    const call = api(h.stack, h.workspace.apiKey);
    const body = { model: 'motion-1', prompt: 'a kite over dunes', seconds: 1, size: '640x360' };
    const headers = { 'idempotency-key': 'cluster-key-1' };
    const first = await call('/v1/videos', { method: 'POST', json: body, headers });
    const again = await call('/v1/videos', { method: 'POST', json: body, headers });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(first.json.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const list = await call('/v1/videos?limit=100');
    expect(list.json.data.filter((v: { prompt: string }) => v.prompt === 'a kite over dunes')).toHaveLength(1);
  });

  it('administers a workspace: members, dashboard sessions, API keys, secrets, limits, a bulk recovery', async () => {
    const accounts = h.stack.accounts;
    const { workspace, owner, apiKey } = await accounts.createWorkspace('admin', 'boss@cluster.test');
    const dev = await accounts.addMember(workspace.id, 'dev@cluster.test', 'member');
    const signed = await accounts.signIn('boss@cluster.test', owner.password, '127.0.0.1');
    expect(signed.session).toMatchObject({ role: 'owner', workspace: { id: workspace.id } });
    const devSession = await accounts.signIn('dev@cluster.test', dev.password, '127.0.0.1');
    // A new role ends the sessions opened under the old one; signed in again, the member has it.
    await accounts.setRole(workspace.id, 'dev@cluster.test', 'admin');
    expect(await accounts.resume(devSession.token)).toBeUndefined();
    const asAdmin = await accounts.signIn('dev@cluster.test', dev.password, '127.0.0.1');
    expect((await accounts.resume(asAdmin.token))?.role).toBe('admin');
    await accounts.removeMember(workspace.id, 'dev@cluster.test');
    expect(await accounts.resume(asAdmin.token)).toBeUndefined();
    await accounts.signOut(signed.token);
    expect(await accounts.resume(signed.token)).toBeUndefined();

    const extra = await accounts.createApiKey(workspace.id);
    expect(await accounts.authenticateApiKey(extra.key)).toBe(workspace.id);
    await accounts.revokeApiKey(workspace.id, extra.id);
    expect((await accounts.apiKeys(workspace.id)).map((k) => k.id)).not.toContain(extra.id);
    await accounts.rotateSecret(workspace.id);
    expect((await accounts.endOverlap(workspace.id)).previous).toBeNull();

    const limits = await h.admin(['set-limits', '--workspace', workspace.id, '--create-per-minute', '7']);
    expect(limits.code).toBe(0);
    const call = api(h.stack, apiKey);
    const created = await call('/v1/images/generations', {
      method: 'POST',
      json: { model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: h.receiver.url('/recover') },
    });
    expect(created.status).toBe(202);
    expect(created.headers.get('x-ratelimit-limit-requests')).toBe('7');
    const recovery = await call('/v1/callbacks/recover', { method: 'POST', json: { since: Math.floor(Date.now() / 1000) - 60 } });
    expect(recovery.status).toBe(202);
    expect(recovery.json).toMatchObject({ object: 'callback.recovery' });
  });

  it('reports ready, and exports queue depth read from the cluster, on every ops port', async () => {
    for (const name of ['api-gateway', 'generator', 'webhook-dispatcher'] as const) {
      expect((await fetch(`${h.stack.service(name).opsUrl}/readyz`)).status).toBe(200);
    }
    const metrics = await (await fetch(`${h.stack.service('api-gateway').opsUrl}/metrics`)).text();
    for (const queue of ['generation', 'job-events', 'callback-deliveries']) {
      expect(metrics).toMatch(new RegExp(`^media_queue_jobs\\{[^}]*queue="${queue}"[^}]*\\} \\d+$`, 'm'));
    }
    // No service logged a Redis command the cluster refused, anywhere in this file's run so far.
    for (const service of h.stack.services.values()) {
      expect(service.lines.filter((l) => /CROSSSLOT|unavailable/i.test(JSON.stringify(l)))).toEqual([]);
    }
  });

  it("keeps a workspace's traffic in one slot, spreads the store's shards over the slot range, and gives each queue a slot of its own", async () => {
    const keys = h.stack.keys;
    const ws = h.workspace.workspaceId;
    const shard = shardOfId(ws);
    expect(shard).not.toBe(LEGACY_SHARD);
    const jobId = newIdBeside(ws, 'video');
    const workspaceSlots = new Set(
      await Promise.all(
        [
          keys.workspaceVideos(ws),
          keys.workspaceCallbacks(ws),
          keys.workspaceUnfinished(ws),
          keys.intake(shard),
          keys.jobExpiry(shard),
          keys.endedCallbacks(shard),
          keys.callbackSchedule(shard),
          keys.job(jobId),
          keys.callback(callbackIdFor(jobId, 'video.completed')),
        ].map(slotOf),
      ),
    );
    expect(workspaceSlots.size).toBe(1);
    // Each shard's slot lies in its own sixteenth of the range: an even share of shards per primary.
    const shardSlots = await Promise.all(Array.from({ length: STORE_SHARDS }, (_, s) => slotOf(keys.intake(s))));
    expect(shardSlots.map((slot) => Math.floor(slot / 1024))).toEqual(Array.from({ length: STORE_SHARDS }, (_, s) => s));
    const storeSlots = new Set([await slotOf(keys.workspace(ws)), ...shardSlots]);
    const queueSlots = await Promise.all((['generation', 'job-events', 'callback-deliveries'] as const).map((q) => slotOf(bullKey(h.stack.prefix, q, 'wait'))));
    expect(new Set([...storeSlots, ...queueSlots]).size).toBe(storeSlots.size + 3);
    // And the data really is spread: with slots split in thirds, every primary holds keys of this stack.
    const nodes = cluster.nodeClients();
    try {
      const holding = await Promise.all(nodes.map(async (node) => (await node.scan('0', 'MATCH', `${h.stack.prefix}:*`, 'COUNT', 10_000))[1].length));
      expect(holding.filter((n) => n > 0)).toHaveLength(3);
    } finally {
      nodes.forEach((node) => node.disconnect());
    }
  });
});
