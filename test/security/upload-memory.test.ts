// One key holder sends edits built to take the gateway's memory: many large parts, in parallel,
// either not images at all or a valid image signature followed by junk. Every request must get a
// clear 4xx in the error shape, and the gateway's resident memory must stay within a bound of
// its own baseline measured here, during and after. Real gateway process, real HTTP.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, TestStack, type TestWorkspace } from '../support/stack';

/** What the gateway may grow by, over its own baseline, while the attack runs (docs/security.md). */
const RSS_BOUND_BYTES = 96 * 1024 * 1024;
const PART_BYTES = 20 * 1024 * 1024 - 1024;
const PARTS = 17;
const PARALLEL = 4;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]);

let stack: TestStack;
let ws: TestWorkspace;
/** The gateway's temp directory, its own, so that what it leaves there can be seen. */
let temp: string;

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), 'gateway-tmp-'));
  stack = await TestStack.start(['api-gateway'], { TMPDIR: temp });
  ws = await stack.createWorkspace('uploads');
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await rm(temp, { recursive: true, force: true });
});

/** The gateway's resident memory, from /proc. */
function rssOf(pid: number): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) * 1024;
}

/**
 * An edit whose body is written part by part, each part's bytes generated as they are sent (the
 * client holds one chunk at a time too). Resolves with the answer, which may come long before the
 * body is all sent: the client then stops sending.
 */
function attack(head: Buffer): Promise<{ status: number; body: any }> {
  const boundary = `----attack${randomBytes(6).toString('hex')}`;
  const chunk = randomBytes(256 * 1024);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(`${stack.baseUrl}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }));
    });
    // Once answered, a reset of what is still being sent is the gateway closing the connection.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    void (async () => {
      const write = (data: Buffer | string) =>
        new Promise<void>((done) => {
          if (answered || req.destroyed) return done();
          if (req.write(data)) done();
          else req.once('drain', () => done());
        });
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nadd a cat\r\n`);
      for (let p = 0; p < PARTS && !answered; p++) {
        await write(`--${boundary}\r\nContent-Disposition: form-data; name="image[]"; filename="${p}.png"\r\nContent-Type: image/png\r\n\r\n`);
        await write(head);
        for (let sent = head.length; sent < PART_BYTES && !answered; sent += chunk.length) await write(chunk.subarray(0, Math.min(chunk.length, PART_BYTES - sent)));
        await write('\r\n');
      }
      await write(`--${boundary}--\r\n`);
      if (!answered && !req.destroyed) req.end();
    })();
  });
}

it(`keeps the gateway within ${RSS_BOUND_BYTES / 1024 / 1024} MiB of its baseline under parallel oversized and non-image multipart bodies, each answered 4xx`, async () => {
  const pid = stack.service('api-gateway').pid!;
  const baseline = rssOf(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  try {
    // Not images: refused at their first bytes.
    const junk = await Promise.all(Array.from({ length: PARALLEL }, () => attack(randomBytes(16))));
    for (const answer of junk) expect([answer.status, answer.body.error.code, answer.body.error.param]).toEqual([400, 'invalid_image_format', 'image[]']);
    // A PNG signature, then junk: streamed to temp files until the request's total passes its cap.
    const big = await Promise.all(Array.from({ length: PARALLEL }, () => attack(PNG_SIGNATURE)));
    for (const answer of big) expect([answer.status, answer.body.error.code, answer.body.error.type]).toEqual([413, 'upload_too_large', 'invalid_request_error']);
  } finally {
    clearInterval(sampler);
  }
  console.log(`gateway RSS: baseline ${(baseline / 1048576).toFixed(0)} MiB, peak ${(peak / 1048576).toFixed(0)} MiB, after ${(rssOf(pid) / 1048576).toFixed(0)} MiB`);
  expect(peak - baseline).toBeLessThan(RSS_BOUND_BYTES);
  // Nothing is left behind in the temp directory.
  await eventually(() => (readdirSync(temp).length === 0 ? true : undefined), 10_000, 'the temp files to be removed');
}, 120_000);
