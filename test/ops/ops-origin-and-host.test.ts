// The operations port in-process (a real listener, Bull Board on a real Redis, real HTTP requests):
// the board refuses state-changing requests that another site's page made the operator's browser
// send (the browser adds the cached Basic credentials to them), and every path of the port refuses a
// Host it does not serve, so a page that rebinds a name of its own to this address reads nothing.
import { randomBytes } from 'node:crypto';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullPrefix, createMetricsRegistry, loadConfig, startOpsServer, type OpsServer } from '@media/common';
import { mountOperatorBoard } from '../../services/api-gateway/src/operator-board';
import { capturingLogger } from '../support/log-capture';
import { deleteKeysUnder, REDIS_URL } from '../support/basics';

const OPERATOR = { username: 'oncall', password: 'a-long-operator-password' };
const BASIC = `Basic ${Buffer.from(`${OPERATOR.username}:${OPERATOR.password}`).toString('base64')}`;
const REFUSED_HOST = 'ops request refused: host not allowed';
const REFUSED_ORIGIN = "board request refused: not from the board's own origin";

const prefix = `ops-guard-${randomBytes(6).toString('hex')}`;
const log = capturingLogger('ops-guard-test');
let redis: Redis;
let ops: OpsServer;
let closeBoard: (() => Promise<void>) | undefined;
let generation: Queue;

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  generation = new Queue('generation', { connection: redis, prefix: bullPrefix(prefix, 'generation') });
  ops = await startOpsServer({
    port: 0,
    host: '127.0.0.1',
    // Through the config module, as the services read it: case and a trailing dot do not matter.
    allowedHosts: loadConfig({ OPS_ALLOWED_HOSTS: 'Ops.Media.Internal.' }).opsAllowedHosts,
    logger: log.logger,
    registry: createMetricsRegistry('ops-guard-test'),
    isReady: async () => ({ ready: true, status: 'ready' }),
    mount: (app) => {
      closeBoard = mountOperatorBoard(app, { connection: redis, keyPrefix: prefix, credentials: OPERATOR, logger: log.logger });
    },
  });
});

afterAll(async () => {
  await closeBoard?.();
  await ops?.close();
  await generation?.close();
  if (redis) await deleteKeysUnder(redis, prefix);
  await redis?.quit();
});

afterEach(async () => {
  await generation.resume();
  await generation.obliterate({ force: true });
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request to the ops port, with exactly these headers (a Host among them replaces the default). */
function send(method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port: ops.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.once('error', fail);
    req.end(body);
  });
}

async function jobsInQueue(): Promise<number> {
  const counts = await generation.getJobCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** The form a page of another site auto-submits: `enctype=text/plain` needs no CORS preflight. */
const FORM = { 'content-type': 'text/plain', authorization: BASIC };
const FORM_BODY = '{"name":"generate-image","data":{"x":"=1"}}';

describe('Bull Board refuses state-changing requests from other sites', () => {
  const crossSite: [string, (port: number) => Record<string, string>][] = [
    ['an Origin of another site', () => ({ origin: 'https://attacker.example' })],
    ['Sec-Fetch-Site: cross-site and no Origin', () => ({ 'sec-fetch-site': 'cross-site' })],
    ['Sec-Fetch-Site: cross-site beside a matching Origin', (port) => ({ origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site' })],
    // The dashboard or the API on another port of the same host is same-site, not the board.
    ['Sec-Fetch-Site: same-site', () => ({ 'sec-fetch-site': 'same-site' })],
    ['an Origin of another port of this host', (port) => ({ origin: `http://127.0.0.1:${port + 1}` })],
    // A sandboxed frame or a cross-site redirect sends the opaque origin.
    ['Origin: null', () => ({ origin: 'null' })],
  ];

  it.each(crossSite)('answers a cross-site form post with valid credentials and %s with 403 in JSON, and adds no job', async (_what, headers) => {
    const res = await send('POST', '/queues/api/queues/generation/add', { ...FORM, ...headers(ops.port) }, FORM_BODY);
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toEqual({ error: expect.stringMatching(/board's own origin/) });
    expect(await jobsInQueue()).toBe(0);
    const line = log.lines.findLast((l) => l.message === REFUSED_ORIGIN);
    expect(line).toMatchObject({ method: 'POST', path: '/queues/api/queues/generation/add' });
    // The cached credentials came with the request; they never reach the log.
    expect(log.text()).not.toContain(OPERATOR.password);
    expect(log.text()).not.toContain(BASIC.slice('Basic '.length));
  });

  it('refuses every state-changing method (POST, PUT, PATCH, DELETE), whatever the route, and changes nothing', async () => {
    await generation.add('generate-image', { jobId: 'kept' }, { jobId: 'kept' });
    const attempts: [string, string][] = [
      ['POST', '/queues/api/queues/generation/add'],
      ['PUT', '/queues/api/queues/generation/pause'],
      ['PATCH', '/queues/api/queues/generation/kept/update-data'],
      ['DELETE', '/queues/api/queues/generation/kept'],
    ];
    for (const [method, path] of attempts) {
      const res = await send(method, path, { ...FORM, origin: 'https://attacker.example' }, '{"data":{"jobId":"changed"}}');
      expect([method, res.status, JSON.parse(res.body)]).toEqual([method, 403, { error: expect.any(String) }]);
    }
    expect(await generation.isPaused()).toBe(false);
    expect((await generation.getJob('kept'))?.data).toEqual({ jobId: 'kept' });
    expect(await jobsInQueue()).toBe(1);
  });

  it('lets reads through whatever their Origin: another site cannot read the answer', async () => {
    const res = await send('GET', '/queues/api/queues', { authorization: BASIC, origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site' });
    expect(res.status).toBe(200);
  });

  const ownSite: [string, (port: number) => Record<string, string>][] = [
    ["the board's own page (Origin and Sec-Fetch-Site: same-origin)", (port) => ({ origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' })],
    ['a port-forward opened as localhost', (port) => ({ host: `localhost:${port}`, origin: `http://localhost:${port}`, 'sec-fetch-site': 'same-origin' })],
    ['curl (neither header)', () => ({})],
    ['a request the operator typed (Sec-Fetch-Site: none)', () => ({ 'sec-fetch-site': 'none' })],
  ];

  it.each(ownSite)('takes them from %s', async (_what, headers) => {
    const json = { 'content-type': 'application/json', authorization: BASIC, ...headers(ops.port) };
    const added = await send('POST', '/queues/api/queues/generation/add', json, JSON.stringify({ name: 'generate-image', data: { jobId: 'by-hand' } }));
    expect(added.status).toBe(200);
    expect(await jobsInQueue()).toBe(1);
    const paused = await send('PUT', '/queues/api/queues/generation/pause', json);
    expect(paused.status).toBe(200);
    expect(await generation.isPaused()).toBe(true);
  });
});

describe('the operations port answers only the hosts it serves', () => {
  const paths = ['/healthz', '/readyz', '/metrics', '/queues/', '/queues/api/queues'];

  it.each(paths)('refuses %s for a foreign Host with 421 in JSON, valid credentials or not, and logs it', async (path) => {
    const res = await send('GET', path, { host: `attacker.example:${ops.port}`, authorization: BASIC });
    expect(res.status).toBe(421);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toEqual({ error: expect.stringMatching(/OPS_ALLOWED_HOSTS/) });
    expect(res.body).not.toMatch(/media_|queue/);
    const line = log.lines.findLast((l) => l.message === REFUSED_HOST);
    expect(line).toMatchObject({ level: 'warn', host: `attacker.example:${ops.port}`, method: 'GET', path: path.split('?')[0] });
    expect(log.text()).not.toContain(OPERATOR.password);
    expect(log.text()).not.toContain(BASIC.slice('Basic '.length));
  });

  it.each([
    'attacker.example',
    'localhost.attacker.example',
    '127.0.0.1.nip.io',
    'ops.media.internal.attacker.example',
    'xn--lcalhost-9za',
    'localhost:9464@attacker.example',
    '::1',
  ])('refuses Host %j, which only looks local or is no host', async (host) => {
    expect((await send('GET', '/healthz', { host })).status).toBe(421);
  });

  it('refuses an HTTP/1.0 request without a Host', async () => {
    const answer = await new Promise<string>((done, fail) => {
      const socket = connect({ host: '127.0.0.1', port: ops.port }, () => socket.end('GET /metrics HTTP/1.0\r\n\r\n'));
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.once('end', () => done(Buffer.concat(chunks).toString('latin1')));
      socket.once('error', fail);
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 421 /);
    expect(answer).not.toContain('media_');
  });

  it.each([
    '127.0.0.1:PORT',
    '10.1.2.3:9464',
    '10.1.2.3',
    '[::1]:PORT',
    '[fd00::7]:9464',
    '[::ffff:10.1.2.3]',
    'localhost',
    'LOCALHOST:PORT',
    'localhost.',
    'ops.media.internal:9464',
    'OPS.media.internal',
  ])('accepts Host %s: IP literals on any port (the kubelet, Prometheus), localhost, and the names of OPS_ALLOWED_HOSTS', async (host) => {
    const res = await send('GET', '/healthz', { host: host.replace('PORT', String(ops.port)) });
    expect(res.status).toBe(200);
    expect((await send('GET', '/metrics', { host: host.replace('PORT', String(ops.port)) })).status).toBe(200);
  });
});
