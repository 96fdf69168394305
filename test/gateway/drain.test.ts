import { connect } from 'node:net';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';

/**
 * SIGTERM means "stop taking connections, let the requests in flight finish, then exit 0". A
 * synchronous image call is the longest request the gateway serves: it waits for the generator.
 * The stack starts without a generator, so the call is still waiting whatever the machine's load,
 * and the generator is started only after the SIGTERM.
 */
describe('api-gateway: SIGTERM drain', () => {
  let stack: TestStack;
  let ws: TestWorkspace;

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway'], { SHUTDOWN_TIMEOUT_MS: '30000' });
    ws = await stack.createWorkspace('gateway-drain');
  });

  afterAll(async () => {
    await stack?.stop();
  });

  /** Starts a synchronous image call and waits until its job is stored, i.e. the gateway is waiting on it. */
  async function syncCallInFlight(prompt: string) {
    const before = new Set(await imageIds());
    const settled: { value?: Awaited<ReturnType<ReturnType<typeof api>>>; error?: unknown } = {};
    const response = api(stack, ws.apiKey)('/v1/images/generations', {
      method: 'POST',
      json: { model: 'pixel-1', prompt, size: '256x256', n: 2 },
    }).then(
      (value) => ((settled.value = value), value),
      (error: unknown) => {
        settled.error = error;
        throw error;
      },
    );
    // Keep an early rejection from counting as unhandled before the test awaits it.
    response.catch(() => undefined);
    const jobId = await eventually(async () => (await imageIds()).find((id) => !before.has(id)), 10_000, 'the sync job to be stored');
    expect((await stack.jobs.get(jobId))?.status).toBe('in_progress');
    return { jobId, response, settled };
  }

  async function imageIds(): Promise<string[]> {
    return stack.redis.zrange(stack.keys.workspaceImages(ws.workspaceId), 0, -1);
  }

  it('answers the waiting sync call with its images, refuses new connections meanwhile, then exits 0 with "stopped"', async () => {
    const gateway = stack.service('api-gateway');
    const { jobId, response, settled } = await syncCallInFlight('a harbour during the drain');

    let exitCode: number | null | undefined;
    const exited = gateway.kill('SIGTERM').then((code) => (exitCode = code));
    await eventually(() => (gateway.hasLog((l) => l.message === 'draining') ? true : undefined), 5_000, 'the gateway to start draining');

    // The listening socket is closed at once: a new connection is refused, not queued.
    await eventually(async () => ((await tryConnect(stack.baseUrl)) === 'refused' ? true : undefined), 3_000, 'new connections to be refused');
    // ...while the process stays up for the call it is still serving, and tells the kubelet it is
    // not ready, so that a load balancer that still sends it requests on kept-alive connections
    // takes it out.
    expect(exitCode).toBeUndefined();
    expect(settled).toEqual({});
    expect((await fetch(`${gateway.opsUrl}/readyz`)).status).toBe(503);

    await stack.startService('generator');
    const res = await response;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(jobId);
    expect(res.json).toMatchObject({ id: jobId, object: 'image.generation', status: 'completed', error: null });
    expect(res.json.data).toHaveLength(2);
    for (const item of res.json.data as { url: string }[]) expect(item.url).toMatch(/^http/);

    // With its last request answered the drain ends on its own, long before the 30 s deadline.
    await eventually(() => (exitCode !== undefined ? true : undefined), 15_000, 'the gateway to exit after its last request');
    await exited;
    expect(exitCode).toBe(0);
    const messages = gateway.lines.map((l) => l.message);
    expect(messages.indexOf('draining')).toBeGreaterThanOrEqual(0);
    expect(messages.at(-1)).toBe('stopped');
    expect(await tryConnect(stack.baseUrl)).toBe('refused');
    expect((await stack.jobs.get(jobId))?.status).toBe('completed');
  });

  it('exits 0 at SHUTDOWN_TIMEOUT_MS when a request never finishes', async () => {
    // Nothing will finish the job: no generator runs from here on.
    await stack.services.get('generator')?.kill('SIGKILL');
    stack.env = { ...stack.env, SHUTDOWN_TIMEOUT_MS: '1500' };
    const gateway = await stack.startService('api-gateway');
    const { jobId, response } = await syncCallInFlight('a harbour nobody renders');

    const started = Date.now();
    const exitCode = await gateway.kill('SIGTERM');
    const elapsed = Date.now() - started;
    expect(exitCode).toBe(0);
    // It did wait for the call (the drain is not skipped) but not past its deadline plus closing.
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(1_500 + 2_500);
    expect(gateway.lines.map((l) => l.message).at(-1)).toBe('stopped');

    // The abandoned call ends without images: the connection is dropped, or a 5xx if the gateway answers first.
    const outcome = await response.then(
      (r) => r.status,
      () => 'dropped' as const,
    );
    expect(outcome === 'dropped' || (typeof outcome === 'number' && outcome >= 500)).toBe(true);
    expect((await stack.jobs.get(jobId))?.status).toBe('in_progress');
  });
});

/** Opens (and closes) one TCP connection to the URL's port. */
function tryConnect(baseUrl: string): Promise<'connected' | 'refused' | string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED' ? 'refused' : String(err.code)));
  });
}
