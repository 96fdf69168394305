import { connect, type Socket } from 'node:net';
import { PREEMPT_AFTER_MS } from '../../services/api-gateway/src/http/json-budget';
import { expectApiError } from '../support/http';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';

/**
 * A gateway reads a bounded amount of JSON edit bodies at once (their images come inline). One
 * workspace sending a body slowly, or not finishing it, must not keep every other workspace's
 * edits out for as long as Node waits for a request: past PREEMPT_AFTER_MS another workspace's
 * request takes its place, and the slow one is told to send again.
 */
let stack: TestStack;
let slow: TestWorkspace;
let other: TestWorkspace;

const pngBytes = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const edit = { prompt: 'a fox', size: '256x256', image: `data:image/png;base64,${pngBytes.toString('base64')}` };
const MAX_JSON_BYTES = 1 << 20;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway', 'generator'], { MAX_JSON_BYTES: String(MAX_JSON_BYTES) });
  slow = await stack.createWorkspace('slow-sender');
  other = await stack.createWorkspace('other');
});

afterAll(async () => {
  await stack?.stop();
});

/** Starts an edit declaring a body at the cap and sends only its first bytes; collects what comes back. */
function stalledEdit(apiKey: string): { socket: Socket; answer: Promise<string> } {
  const socket = connect(Number(new URL(stack.baseUrl).port), '127.0.0.1');
  socket.write(
    `POST /v1/images/edits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${MAX_JSON_BYTES}\r\n\r\n{"prompt":"slow","image":"data:image/png;base64,`,
  );
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8'))));
  return { socket, answer };
}

it('gives the place of a body still arriving after the limit to another workspace, never to the sender’s own', async () => {
  const startedMs = Date.now();
  const stalled = stalledEdit(slow.apiKey);
  try {
    const asOther = api(stack, other.apiKey);
    // The budget is the stalled body's: the other workspace is told to retry, as long as the limit has not passed.
    const early = await eventually(
      async () => {
        const res = await asOther('/v1/images/edits', { method: 'POST', json: edit });
        return res.status === 503 ? res : undefined;
      },
      5_000,
      'the stalled body to hold the budget',
    );
    expectApiError(early, 503, { code: 'server_busy' });
    expect(Date.now() - startedMs).toBeLessThan(PREEMPT_AFTER_MS);

    await new Promise((r) => setTimeout(r, Math.max(0, startedMs + PREEMPT_AFTER_MS + 500 - Date.now())));
    // The sender's own workspace does not cut its own upload short.
    expectApiError(await api(stack, slow.apiKey)('/v1/images/edits', { method: 'POST', json: edit }), 503, { code: 'server_busy' });
    const served = await asOther('/v1/images/edits', { method: 'POST', json: edit });
    expect(served.status).toBe(200);
    expect(served.json.data).toHaveLength(1);
    const answer = await stalled.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('"code":"server_busy"');
  } finally {
    stalled.socket.destroy();
  }
}, 60_000);
