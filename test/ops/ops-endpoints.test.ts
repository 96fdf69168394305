// Every service's ops port against real processes: /metrics moves as jobs run and callbacks fail,
// metrics never appear on the public port, a Host the port does not serve is refused, and Bull Board
// refuses anyone without operator credentials.
import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { api, eventually, TestStack, type ServiceName } from '../support/stack';

const OPERATOR = { user: 'oncall', password: 'a-long-operator-password' };

let stack: TestStack;
let receiver: Server;
let receiverUrl: string;
let receiverHits = 0;

beforeAll(async () => {
  // A receiver that always fails, so the dispatcher's failure counters have something to count.
  receiver = createServer((_req, res) => {
    receiverHits++;
    res.writeHead(500).end('down');
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  stack = await TestStack.start(['api-gateway', 'generator', 'webhook-dispatcher'], {
    CALLBACK_ALLOW_HTTP: '1',
    CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8',
    WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms',
    OPERATOR_USERNAME: OPERATOR.user,
    OPERATOR_PASSWORD: OPERATOR.password,
    OPS_ALLOWED_HOSTS: 'ops.media.internal',
  });
});

afterAll(async () => {
  await stack?.stop();
  await new Promise((r) => receiver?.close(r));
});

const ops = (name: ServiceName) => stack.service(name).opsUrl;

async function scrape(name: ServiceName): Promise<string> {
  const res = await fetch(`${ops(name)}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one series (labels in any order), or undefined when it is not exported. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('ops port', () => {
  it.each(['api-gateway', 'generator', 'webhook-dispatcher'] as const)('%s answers /healthz, /readyz and /metrics', async (name) => {
    const health = await fetch(`${ops(name)}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
    const ready = await eventually(async () => ((await fetch(`${ops(name)}/readyz`)).status === 200 ? true : undefined), 10_000, `${name} ready`);
    expect(ready).toBe(true);
    const text = await scrape(name);
    expect(text).toMatch(/^# TYPE media_queue_jobs gauge$/m);
    expect(text).toMatch(/^media_process_cpu_seconds_total\{service="/m);
  });

  it.each(['api-gateway', 'generator', 'webhook-dispatcher'] as const)(
    '%s refuses a Host it does not serve (a DNS-rebinding page), logs it, and serves the names of OPS_ALLOWED_HOSTS',
    async (name) => {
      const port = Number(new URL(ops(name)).port);
      const refused = await getWithHost(port, '/metrics', 'attacker.example');
      expect(refused.status).toBe(421);
      expect(JSON.parse(refused.body)).toEqual({ error: expect.any(String) });
      await eventually(
        () => (stack.service(name).hasLog((l) => l.message === 'ops request refused: host not allowed' && l.host === 'attacker.example') ? true : undefined),
        5_000,
        `${name} to log the refusal`,
      );
      const named = await getWithHost(port, '/metrics', `ops.media.internal:${port}`);
      expect(named.status).toBe(200);
      expect(named.body).toMatch(/^# TYPE media_queue_jobs gauge$/m);
    },
  );

  it('keeps /metrics off the public port, while the gateway still answers /healthz and /readyz there', async () => {
    expect((await fetch(`${stack.baseUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${stack.baseUrl}/readyz`)).status).toBe(200);
  });
});

describe('metrics move as work happens', () => {
  it('counts requests by route pattern, generation outcomes, charges, queue depth and failing callbacks', async () => {
    const { apiKey } = await stack.createWorkspace('metrics');
    const call = api(stack, apiKey);
    const created = await call('/v1/images/generations', {
      method: 'POST',
      json: { prompt: 'metrics', size: '256x256', callback_url: receiverUrl },
    });
    expect(created.status).toBe(202);
    await call(`/v1/images/${created.json.id}`);
    await call('/v1/images/req_doesnotexist');

    const gateway = await scrape('api-gateway');
    // The pattern, not the path: two ids, one series.
    expect(sample(gateway, 'media_http_requests_total', { route: '/v1/images/generations', method: 'POST', status: '202' })).toBe(1);
    expect(sample(gateway, 'media_http_requests_total', { route: '/v1/images/:id', method: 'GET', status: '200' })).toBe(1);
    expect(sample(gateway, 'media_http_requests_total', { route: '/v1/images/:id', method: 'GET', status: '404' })).toBe(1);
    expect(gateway).not.toContain('req_doesnotexist');
    expect(sample(gateway, 'media_http_request_duration_seconds_count', { route: '/v1/images/generations', method: 'POST' })).toBe(1);
    // The gateway exports every queue's gauges (the scaler's source when a worker runs no replica).
    for (const queue of ['generation', 'job-events', 'callback-deliveries']) {
      for (const state of ['waiting', 'prioritized', 'delayed', 'delayed_due', 'active', 'failed']) {
        expect(sample(gateway, 'media_queue_jobs', { queue, state })).toEqual(expect.any(Number));
      }
      expect(sample(gateway, 'media_queue_oldest_waiting_seconds', { queue })).toEqual(expect.any(Number));
    }

    const generator = await eventually(
      async () => {
        const text = await scrape('generator');
        return sample(text, 'media_generation_jobs_total', { kind: 'image', outcome: 'completed' }) === 1 ? text : undefined;
      },
      30_000,
      'a completed generation in the generator metrics',
    );
    expect(sample(generator, 'media_charges_usd_total')).toBeGreaterThan(0);
    expect(sample(generator, 'media_generation_job_duration_seconds_count', { kind: 'image', outcome: 'completed' })).toBe(1);
    expect(sample(generator, 'media_queue_jobs', { queue: 'generation', state: 'waiting' })).toBe(0);
    // Retention's backlog, read from Redis at scrape time: nothing is past its (7-day) retention here.
    expect(sample(generator, 'media_retention_due', { kind: 'job' })).toBe(0);
    expect(sample(generator, 'media_retention_due', { kind: 'callback' })).toBe(0);

    // Six automatic attempts, every one a 500: the callback ends failed. The counter moves just after
    // the attempt is recorded (the state the gauge reads), so wait for both.
    const dispatcher = await eventually(
      async () => {
        const text = await scrape('webhook-dispatcher');
        const ended = sample(text, 'media_callbacks', { status: 'failed' }) === 1;
        return ended && sample(text, 'media_callback_attempts_total', { outcome: 'failed', error: 'http_error' }) === 6 ? text : undefined;
      },
      30_000,
      'the callback to end failed after six counted attempts',
    );
    expect(receiverHits).toBe(6);
    expect(sample(dispatcher, 'media_callback_attempts_total', { outcome: 'failed', error: 'http_error' })).toBe(6);
    expect(sample(dispatcher, 'media_callback_first_attempt_seconds_count')).toBe(1);
    expect(sample(dispatcher, 'media_callback_delivered_seconds_count')).toBe(0);
    expect(sample(dispatcher, 'media_callbacks', { status: 'pending' })).toBe(0);
    expect(sample(dispatcher, 'media_queue_jobs', { queue: 'callback-deliveries', state: 'delayed' })).toBe(0);
  });

  it('shows a backlog in the queue gauges while no generator runs', async () => {
    await stack.service('generator').kill('SIGTERM');
    const { apiKey } = await stack.createWorkspace('backlog');
    const call = api(stack, apiKey);
    for (let i = 0; i < 2; i++) {
      const res = await call('/v1/videos', { method: 'POST', json: { prompt: `backlog ${i}`, seconds: 1, size: '640x360' } });
      expect(res.status).toBe(200);
    }
    // Generation jobs wait in BullMQ's prioritized set (fair scheduling ranks them), not its wait list.
    const text = await eventually(
      async () => {
        const t = await scrape('api-gateway');
        return (sample(t, 'media_queue_jobs', { queue: 'generation', state: 'prioritized' }) ?? 0) >= 2 ? t : undefined;
      },
      10_000,
      'two prioritized generation jobs',
    );
    expect(sample(text, 'media_queue_jobs', { queue: 'generation', state: 'waiting' })).toBe(0);
    expect(sample(text, 'media_queue_oldest_waiting_seconds', { queue: 'generation' })).toBeGreaterThan(0);
    await stack.startService('generator');
    await eventually(
      async () => {
        const t = await scrape('api-gateway');
        return sample(t, 'media_queue_jobs', { queue: 'generation', state: 'prioritized' }) === 0 ? true : undefined;
      },
      30_000,
      'the backlog to drain',
    );
  });
});

describe('Bull Board', () => {
  const board = () => `${ops('api-gateway')}/queues`;
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('refuses a request without operator credentials, or with wrong ones, or with an API key', async () => {
    const none = await fetch(board());
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await fetch(board(), { headers: { authorization: basic(OPERATOR.user, 'wrong') } })).status).toBe(401);
    expect((await fetch(board(), { headers: { authorization: basic('someone', OPERATOR.password) } })).status).toBe(401);
    const { apiKey } = await stack.createWorkspace('not-an-operator');
    expect((await fetch(board(), { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(401);
    expect((await fetch(`${board()}/api/queues`)).status).toBe(401);
  });

  it('serves the board and its API to an operator', async () => {
    const auth = { authorization: basic(OPERATOR.user, OPERATOR.password) };
    const page = await fetch(`${board()}/`, { headers: auth });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const queues = await fetch(`${board()}/api/queues`, { headers: auth });
    expect(queues.status).toBe(200);
    const body = (await queues.json()) as { queues: Array<{ name: string }> };
    expect(body.queues.map((q) => q.name).sort()).toEqual(['callback-deliveries', 'generation', 'job-events', 'maintenance']);
  });

  it('is not on the public port', async () => {
    expect((await fetch(`${stack.baseUrl}/queues`)).status).toBe(404);
  });

  it("refuses a cross-site form post carrying the operator's cached credentials, as it takes the board's own", async () => {
    const form = { authorization: basic(OPERATOR.user, OPERATOR.password), 'content-type': 'text/plain' };
    const crossSite = await fetch(`${board()}/api/queues/maintenance/pause`, { method: 'PUT', headers: { ...form, origin: 'https://attacker.example' } });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toEqual({ error: expect.stringMatching(/board's own origin/) });
    const own = new URL(ops('api-gateway')).origin;
    const paused = await fetch(`${board()}/api/queues/maintenance/pause`, {
      method: 'PUT',
      headers: { ...form, origin: own, 'sec-fetch-site': 'same-origin' },
    });
    expect(paused.status).toBe(200);
    expect((await fetch(`${board()}/api/queues/maintenance/resume`, { method: 'PUT', headers: { ...form, origin: own } })).status).toBe(200);
  });

  it('makes an address that keeps guessing wait, the right password included, while an operator elsewhere gets in', async () => {
    // Two wrong tries were made above; eight more reach the limit of ten.
    for (let i = 0; i < 8; i++) expect((await fetch(board(), { headers: { authorization: basic(OPERATOR.user, `guess-${i}`) } })).status).toBe(401);
    const held = await fetch(board(), { headers: { authorization: basic(OPERATOR.user, OPERATOR.password) } });
    expect(held.status).toBe(429);
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(60);
    expect(await getFrom('127.0.0.2', `${board()}/api/queues`, basic(OPERATOR.user, OPERATOR.password))).toBe(200);
  });
});

describe('ops address', () => {
  it('listens on loopback by default, and on every interface where OPS_HOST says so', async () => {
    const port = Number(new URL(ops('webhook-dispatcher')).port);
    // 127.0.0.2 is this machine too, but not the address a loopback-only listener is bound to.
    await expect(connects('127.0.0.2', port)).resolves.toBe(false);
    const open = await stack.startService('webhook-dispatcher', { OPS_HOST: '0.0.0.0' });
    await expect(connects('127.0.0.2', Number(new URL(open.opsUrl).port))).resolves.toBe(true);
  });
});

/** The status of a GET sent from `localAddress` (another loopback address: a client elsewhere). */
function getFrom(localAddress: string, url: string, authorization: string): Promise<number> {
  return new Promise((done, fail) => {
    const req = request(url, { localAddress, headers: { authorization } }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.once('error', fail);
    req.end();
  });
}

/** A GET to the loopback ops port naming `host` in its Host header, as a page on that name would. */
function getWithHost(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.once('error', fail);
    req.end();
  });
}

/** Whether a TCP connection to `host:port` is accepted. */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}
