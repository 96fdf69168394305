import { verify } from '@media/callback-signing';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { PrivateRedis } from '../support/private-redis';
import { eventually } from '../support/stack';

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

it('finishes, charges once and calls back every job across a Redis restart; the API answers 503 meanwhile, never crashes', async () => {
  const url = h.receiver.url('/restart');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await h.jobs.video(url, `restart video ${i}`));
  for (let i = 0; i < 3; i++) ids.push(await h.jobs.image(url, `restart image ${i}`));

  await redis.stop();
  const down = await fetch(`${h.stack.baseUrl}/readyz`);
  expect(down.status).toBe(503);
  const refused = await fetch(`${h.stack.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${h.workspace.apiKey}` } });
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(((await refused.json()) as { error: { type: string; code: string } }).error).toMatchObject({ type: 'api_error', code: 'service_unavailable' });
  await redis.launch();

  // Readiness tells the truth: once it is back, work submitted after the restart goes through too.
  await eventually(async () => ((await fetch(`${h.stack.baseUrl}/readyz`)).status === 200 ? true : undefined), 15_000, 'the gateway to be ready again');
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
