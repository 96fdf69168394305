// One client (127.0.0.2) tries to take the gateway's connections and upload places: connections
// that never send a byte, more of them than it may hold, uploads that send a byte every half
// second, more uploads at once than its workspace may stream, and a flood of wrong API keys.
// Another client (127.0.0.1) must keep getting its answers, each cap must be logged when hit, and
// what the first client holds must be let go within the documented bounds. Real gateway process,
// real TCP and HTTP, loopback addresses only.
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';

const PER_ADDRESS = 20;
const ALL = 120;
const HEADERS_TIMEOUT_MS = 2_000;
/** Node looks for expired connections once a second (services/api-gateway/src/http/api-server.ts). */
const CHECK_MS = 1_000;
const UPLOADS = 2;
const AUTH_FAILURES = 30;
/** services/api-gateway/src/http/body-rate.ts. */
const BODY_GRACE_MS = 10_000;
const ATTACKER = '127.0.0.2';

let stack: TestStack;
let ws: TestWorkspace;
let other: TestWorkspace;
let port: number;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], {
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    HTTP_MAX_CONNECTIONS: String(ALL),
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    MAX_CONCURRENT_UPLOADS_PER_WORKSPACE: String(UPLOADS),
    AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: String(AUTH_FAILURES),
  });
  [ws, other] = [await stack.createWorkspace('holder'), await stack.createWorkspace('other')];
  port = Number(new URL(stack.baseUrl).port);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const gatewayLines = () => stack.service('api-gateway').lines;
const logged = (message: RegExp) => gatewayLines().some((l) => message.test(String(l.message)));

/**
 * A TCP connection from `localAddress` that sends nothing; when it was opened and, once it is,
 * closed, and whether the gateway answered before closing it (a 408 at the headers timeout) or
 * closed it without a byte (refused by a cap).
 */
async function idle(localAddress: string): Promise<{ socket: Socket; openedMs: number; closedMs?: number; answered: boolean }> {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  const held = { socket, openedMs: Date.now(), closedMs: undefined as number | undefined, answered: false };
  socket.on('close', () => (held.closedMs = Date.now()));
  socket.on('error', () => undefined);
  socket.on('data', () => (held.answered = true));
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', () => resolve());
  });
  return held;
}

interface Answer {
  status: number;
  json: { error?: { code?: string; type?: string } } & Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

/** One HTTP request from `localAddress`, on a connection of its own; `body` may be written slowly by `write`. */
function call(
  path: string,
  opts: { localAddress?: string; method?: string; headers?: Record<string, string>; body?: Buffer; write?: (req: ReturnType<typeof request>) => void },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers, localAddress: opts.localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : {}, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    if (opts.write) opts.write(req);
    else req.end(opts.body);
  });
}

const healthz = () => call('/healthz', { localAddress: '127.0.0.1' });

/** A video's multipart creation (as the openai SDK sends it): its first part begun, never finished unless `rest` is written. */
function multipartStart(key: string): { headers: Record<string, string>; head: Buffer; rest: Buffer } {
  const boundary = 'x-slow-boundary';
  const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\n`);
  const rest = Buffer.from(`a small red boat\r\n--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nmotion-1\r\n--${boundary}--\r\n`);
  return {
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + rest.length),
    },
    head,
    rest,
  };
}

it('closes at once the connections one address opens past its cap, and every idle one within the header timeout, while another client is answered', async () => {
  const held = await Promise.all(Array.from({ length: 2 * PER_ADDRESS }, () => idle(ATTACKER)));
  expect((await healthz()).status).toBe(200);
  // Past the cap: closed at once.
  await eventually(
    () => (held.filter((h) => h.closedMs !== undefined).length >= PER_ADDRESS ? true : undefined),
    2_000,
    'the connections past the cap to close',
  );
  await eventually(() => (logged(/HTTP_MAX_CONNECTIONS_PER_ADDRESS/) ? true : undefined), 2_000, 'the cap to be logged');
  // The rest, which sent nothing: closed once the header timeout has passed.
  await eventually(
    () => (held.every((h) => h.closedMs !== undefined) ? true : undefined),
    HEADERS_TIMEOUT_MS + CHECK_MS + 2_000,
    'every idle connection to close',
  );
  const longest = Math.max(...held.map((h) => h.closedMs! - h.openedMs));
  console.log(`idle connections held at most ${longest} ms (header timeout ${HEADERS_TIMEOUT_MS} ms, checked every ${CHECK_MS} ms)`);
  expect(longest).toBeLessThanOrEqual(HEADERS_TIMEOUT_MS + CHECK_MS + 1_000);
  expect((await healthz()).status).toBe(200);
}, 30_000);

it('closes connections past the gateway’s cap of all, logs it, and takes new ones once those held are let go', async () => {
  // Several addresses, each within its own cap, together past the cap of all.
  const addresses = Array.from({ length: Math.ceil(ALL / PER_ADDRESS) + 1 }, (_, i) => `127.0.0.${10 + i}`);
  const held = (await Promise.all(addresses.map((a) => Promise.all(Array.from({ length: PER_ADDRESS }, () => idle(a)))))).flat();
  await eventually(() => (logged(/holds HTTP_MAX_CONNECTIONS already/) ? true : undefined), 3_000, 'the cap of all to be logged');
  await eventually(
    () => (held.every((h) => h.closedMs !== undefined) ? true : undefined),
    HEADERS_TIMEOUT_MS + CHECK_MS + 2_000,
    'every idle connection to close',
  );
  // Those past the cap were closed without a byte; the rest were held until the headers timeout
  // answered them 408. Told apart by what they got, not by when, which a loaded machine stretches.
  expect(held.filter((h) => !h.answered).length).toBeGreaterThanOrEqual(held.length - ALL);
  expect(held.filter((h) => h.answered).length).toBeGreaterThan(0);
  expect((await healthz()).status).toBe(200);
}, 30_000);

it('answers 408 to an upload that sends a byte every half second once its grace is over, while another client is answered', async () => {
  const { headers, head, rest } = multipartStart(ws.apiKey);
  let timer: NodeJS.Timeout | undefined;
  const started = Date.now();
  const slow = call('/v1/videos', {
    localAddress: ATTACKER,
    method: 'POST',
    headers,
    write: (req) => {
      req.write(head);
      let i = 0;
      timer = setInterval(() => {
        if (i < rest.length && !req.destroyed) req.write(rest.subarray(i, ++i));
      }, 500);
      req.on('close', () => clearInterval(timer));
    },
  });
  expect((await healthz()).status).toBe(200);
  const answer = await slow;
  clearInterval(timer);
  const tookMs = Date.now() - started;
  expect([answer.status, answer.json.error?.code, answer.headers.connection]).toEqual([408, 'request_timeout', 'close']);
  expect(tookMs).toBeGreaterThanOrEqual(BODY_GRACE_MS);
  expect(tookMs).toBeLessThanOrEqual(BODY_GRACE_MS + CHECK_MS + 2_000);
  expect(logged(/HTTP_MIN_BODY_BYTES_PER_SECOND/)).toBe(true);
}, 30_000);

it('refuses a workspace’s upload past its cap of uploads at once, and not another workspace’s', async () => {
  const { headers, head } = multipartStart(ws.apiKey);
  const requests: ReturnType<typeof request>[] = [];
  const pending = Array.from({ length: UPLOADS }, () =>
    call('/v1/videos', {
      method: 'POST',
      headers,
      write: (req) => {
        requests.push(req);
        req.write(head);
      },
    }).catch(() => undefined),
  );
  await eventually(() => (requests.length === UPLOADS ? true : undefined), 2_000, 'the uploads to start');
  // The gateway has them once it answers a request sent after them on another connection.
  expect((await healthz()).status).toBe(200);
  const third = await eventually(
    async () => {
      const { headers: h, head: start, rest } = multipartStart(ws.apiKey);
      const answer = await call('/v1/videos', { method: 'POST', headers: h, body: Buffer.concat([start, rest]) });
      return answer.status === 429 ? answer : undefined;
    },
    3_000,
    'an upload past the cap to be refused',
  );
  expect([third.json.error?.code, third.headers['retry-after']]).toEqual(['too_many_concurrent_uploads', '1']);
  expect(logged(/MAX_CONCURRENT_UPLOADS_PER_WORKSPACE/)).toBe(true);
  // Another workspace's upload: taken.
  const { headers: theirs, head: start, rest } = multipartStart(other.apiKey);
  const answer = await call('/v1/videos', { method: 'POST', headers: theirs, body: Buffer.concat([start, rest]) });
  expect([answer.status, answer.json.object]).toEqual([200, 'video']);
  for (const req of requests) req.destroy();
  await Promise.all(pending);
}, 30_000);

it('answers 429 to wrong keys from one address past the bound, while a valid key from another address keeps working', async () => {
  const wrong = { authorization: 'Bearer sk_this-is-not-a-key' };
  const answers: Answer[] = [];
  for (let i = 0; i < AUTH_FAILURES + 10; i++) answers.push(await call('/v1/models', { localAddress: ATTACKER, headers: wrong }));
  expect(answers.slice(0, AUTH_FAILURES).map((a) => a.status)).toEqual(Array(AUTH_FAILURES).fill(401));
  expect(answers.slice(AUTH_FAILURES + 1).map((a) => [a.status, a.json.error?.code])).toEqual(Array(9).fill([429, 'too_many_failed_authentications']));
  expect(Number(answers.at(-1)!.headers['retry-after'])).toBeGreaterThan(0);
  // The workspace's valid key from another address: not affected.
  expect((await call('/v1/models', { localAddress: '127.0.0.1', headers: { authorization: `Bearer ${ws.apiKey}` } })).status).toBe(200);
  // From the refused address, every key waits out the minute.
  expect((await call('/v1/models', { localAddress: ATTACKER, headers: { authorization: `Bearer ${ws.apiKey}` } })).status).toBe(429);
  expect(logged(/failed authentications from one address over the bound/)).toBe(true);
});
