import { connect, type Socket } from 'node:net';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';

/**
 * A gateway reads a bounded amount of JSON edit bodies at once (their images come inline). One
 * workspace sending a body slowly, or not finishing it, must not keep every other workspace's
 * edits out for as long as Node waits for a request: once it has stopped for PREEMPT_GRACE_MS another
 * workspace's request takes its place, and the stalled one is told to send again.
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

it('gives the place of a body that stopped arriving to another workspace within the grace', async () => {
  const stalled = stalledEdit(slow.apiKey);
  try {
    const asOther = api(stack, other.apiKey);
    // The other workspace, retrying as the SDK does on 503, gets in once the stalled body has
    // stopped for the grace, instead of once Node gives up on it minutes later.
    const served = await eventually(
      async () => {
        const res = await asOther('/v1/images/edits', { method: 'POST', json: edit });
        return res.status === 503 ? undefined : res;
      },
      20_000,
      'another workspace to take the stalled body’s place',
    );
    expect(served.status).toBe(200);
    expect(served.json.data).toHaveLength(1);
    const answer = await stalled.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/connection: close/i);
    // Cut short for the other workspace: it had the budget, and is told why it lost it.
    expect(answer).toContain('"code":"server_busy"');
    expect(answer).toContain('stopped arriving');
  } finally {
    stalled.socket.destroy();
  }
}, 60_000);
