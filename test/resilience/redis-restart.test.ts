import { verify } from '@media/webhooks';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { PrivateRedis } from '../support/private-redis';

/**
 * A Redis restart in the middle of work loses no job, no callback and no charge. The stack runs
 * on a private redis-server (AOF, fsync always, as production runs it) that the test restarts.
 */
let redis: PrivateRedis;
let h: DispatcherHarness;

beforeAll(async () => {
  redis = await PrivateRedis.start();
  h = await DispatcherHarness.start({ REDIS_URL: redis.url });
});

afterAll(async () => {
  await h?.stop();
  await redis?.destroy();
});

it('finishes, charges once and calls back every job across a Redis restart; the API answers 5xx meanwhile, never crashes', async () => {
  const url = h.receiver.url('/restart');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await h.jobs.video(url, `restart video ${i}`));
  for (let i = 0; i < 3; i++) ids.push(await h.jobs.image(url, `restart image ${i}`));

  await redis.stop();
  const down = await fetch(`${h.stack.baseUrl}/readyz`);
  expect(down.status).toBe(503);
  const refused = await fetch(`${h.stack.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${h.workspace.apiKey}` } });
  expect(refused.status).toBeGreaterThanOrEqual(500);
  expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('api_error');
  await redis.launch();

  // Work submitted after the restart goes through too.
  ids.push(await h.jobs.image(url, 'after the restart'));

  for (const id of ids) {
    const messageId = await h.messageIdOf(id);
    const { callback } = await h.settled(messageId, ['delivered'], 60_000);
    expect(callback.state).toBe('delivered');
    const received = h.receiver.requests.filter((r) => r.headers['webhook-id'] === messageId);
    expect(received.length).toBeGreaterThanOrEqual(1);
    for (const request of received) verify(request.body, request.headers, h.workspace.signingSecret);
  }
  for (const service of ['api-gateway', 'generator', 'webhook-dispatcher'] as const) {
    expect(h.stack.service(service).pid).toBeDefined();
    expect(await isAlive(h.stack.service(service).pid!)).toBe(true);
  }
  const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
  for (const id of ids) expect(ledger.filter((entry) => entry.job_id === id)).toHaveLength(1);
});

async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
