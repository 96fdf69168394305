// A key holder sends JSON bodies built to hold the gateway's event loop: deeply nested arrays at
// the edit route's size cap, from a workspace with room in its rate limit and from one already
// over it, and smaller nested bodies to a route that does not exist. Another client's /healthz
// must answer about as fast as while bodies of the same size that parse in linear time arrive (a
// ratio to that run, measured here), and every such body gets a clear 4xx in the error shape.
// Real gateway process, real HTTP.
import { request } from 'node:http';
import { JSON_MAX_DEPTH } from '@media/common';
import { TestStack, type TestWorkspace } from '../support/stack';

const MiB = 1024 * 1024;
/** Under MAX_JSON_BYTES (32 MiB), the edit route's cap. */
const LARGE = 31 * MiB;
const SMALL = 1 * MiB - 64;
const ROUNDS = 3;

let stack: TestStack;
let roomy: TestWorkspace;
let limited: TestWorkspace;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], {});
  [roomy, limited] = [await stack.createWorkspace('roomy'), await stack.createWorkspace('limited')];
  // One creation a minute, spent at once below: every later one is over the limit.
  await stack.redis.hset(stack.keys.workspaceLimits(limited.workspaceId), 'create_per_minute', '1');
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** `[[[…]]]` of `bytes` bytes: as deep as it is long. */
const nested = (bytes: number) => Buffer.concat([Buffer.alloc(bytes / 2, '['), Buffer.alloc(bytes / 2, ']')]);
/** A body of the same size that parses in linear time: one long string. */
const flat = (bytes: number) => Buffer.from(`{"prompt":"${'a'.repeat(bytes - 14)}"}`);

function post(path: string, key: string, body: Buffer): Promise<{ status: number; json: { error?: { code?: string; type?: string } } }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, stack.baseUrl);
    const req = request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Runs `attack` while another client asks /healthz one request after another; the slowest answer
 * it got (ms), and the attack's answers.
 */
async function stallDuring<T>(attack: () => Promise<T>): Promise<{ slowestMs: number; answers: T }> {
  let done = false;
  let slowestMs = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      await fetch(`${stack.baseUrl}/healthz`);
      slowestMs = Math.max(slowestMs, performance.now() - started);
    }
  })();
  try {
    return { answers: await attack(), slowestMs };
  } finally {
    done = true;
    await probe;
  }
}

const rounds = async <T>(count: number, one: () => Promise<T>): Promise<T[]> => {
  const all: T[] = [];
  for (let i = 0; i < count; i++) all.push(await one());
  return all;
};

it('refuses deeply nested JSON before parsing it, from a workspace with room or over its limit and to a route that does not exist, without holding up another client', async () => {
  // Spend the limited workspace's one creation of this minute.
  await post('/v1/images/generations', limited.apiKey, Buffer.from('{}'));

  const flatLarge = flat(LARGE);
  const baseline = await stallDuring(() => rounds(ROUNDS, () => post('/v1/images/edits', roomy.apiKey, flatLarge)));
  // Parsed, then refused by the edit's validation: no image.
  for (const answer of baseline.answers) expect(answer.status).toBe(400);
  const bound = Math.max(2 * baseline.slowestMs, baseline.slowestMs + 250);

  const deep = nested(LARGE);
  const roomyRun = await stallDuring(() => rounds(ROUNDS, () => post('/v1/images/edits', roomy.apiKey, deep)));
  for (const answer of roomyRun.answers) expect([answer.status, answer.json.error?.code]).toEqual([400, 'json_too_complex']);

  const limitedRun = await stallDuring(() => rounds(ROUNDS, () => post('/v1/images/edits', limited.apiKey, deep)));
  // Over the limit: refused before its body is read, let alone parsed.
  for (const answer of limitedRun.answers) expect([answer.status, answer.json.error?.code]).toEqual([429, 'rate_limit_exceeded']);

  const deepSmall = nested(SMALL);
  const unknownRun = await stallDuring(() =>
    Promise.all(Array.from({ length: 4 }, () => rounds(10, () => post('/v1/no-such-route', roomy.apiKey, deepSmall)))).then((all) => all.flat()),
  );
  for (const answer of unknownRun.answers) expect([answer.status, answer.json.error?.type]).toEqual([404, 'not_found_error']);

  console.log(
    `slowest /healthz: flat bodies ${baseline.slowestMs.toFixed(0)} ms; nested ${roomyRun.slowestMs.toFixed(0)} ms, ` +
      `over the limit ${limitedRun.slowestMs.toFixed(0)} ms, unknown route ${unknownRun.slowestMs.toFixed(0)} ms (bound ${bound.toFixed(0)} ms)`,
  );
  expect(roomyRun.slowestMs).toBeLessThanOrEqual(bound);
  expect(limitedRun.slowestMs).toBeLessThanOrEqual(bound);
  expect(unknownRun.slowestMs).toBeLessThanOrEqual(bound);
}, 120_000);

it('takes JSON as deep as the limit, and no deeper, in every body the API reads', async () => {
  const nestedTo = (depth: number) => `{"prompt":"a boat","metadata":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
  // Within the limit, the body parses and the request is judged on its fields.
  const within = await post('/v1/videos', roomy.apiKey, Buffer.from(nestedTo(JSON_MAX_DEPTH)));
  expect(within.json.error?.code).not.toBe('json_too_complex');
  const deeper = await post('/v1/videos', roomy.apiKey, Buffer.from(nestedTo(JSON_MAX_DEPTH + 1)));
  expect([deeper.status, deeper.json.error?.code]).toEqual([400, 'json_too_complex']);
  // Brackets inside a string are text, not nesting.
  const quoted = await post('/v1/videos', roomy.apiKey, Buffer.from(`{"prompt":"${'[{'.repeat(1000)}\\"${']'.repeat(1000)}"}`));
  expect(quoted.json.error?.code).not.toBe('json_too_complex');
});
