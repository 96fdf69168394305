import { verify } from '@media/callback-signing';
import { apiError, OpenAiTestServer } from '../../services/generator/src/backends/test-support/openai-server';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { api, eventually } from '../support/stack';

// The API's two image paths with GENERATOR_BACKEND=openai-compatible: a synchronous call answered
// with the model server's image, and a 202 with a callback, delivered signed, whose link serves that
// image. Gateway, generator and dispatcher run in-process (the real services, from their sources);
// the model server is a loopback server that speaks OpenAI's Images API
// (services/generator/src/backends/test-support/openai-server.ts).
describe('gateway: images made by the openai-compatible backend', () => {
  let upstream: OpenAiTestServer;
  let h: DispatcherHarness;

  beforeAll(async () => {
    upstream = await OpenAiTestServer.start();
    h = await DispatcherHarness.start({ ...upstream.env, UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1' }, { inProcess: true });
  });

  afterEach(() => upstream?.reset());

  afterAll(async () => {
    await h?.stop();
    await upstream?.stop();
  });

  /** The image the model server answered the request with this prompt. */
  function madeFor(prompt: string): Buffer {
    const [request] = upstream.requestsTo('images.generations', prompt);
    expect(request!.fields).toMatchObject({ model: 'gpt-image-1', prompt });
    return Buffer.from((request!.answer!.json as { data: { b64_json: string }[] }).data[0]!.b64_json, 'base64');
  }

  it('answers a synchronous call with the image the model server made', async () => {
    const prompt = 'a synchronous harbour';
    const res = await api(h.stack, h.workspace.apiKey)('/v1/images/generations', {
      method: 'POST',
      json: { model: 'pixel-1', prompt, size: '256x256', response_format: 'b64_json' },
    });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('completed');
    expect(Buffer.from(res.json.data[0].b64_json, 'base64').equals(madeFor(prompt))).toBe(true);
  });

  it('accepts a call with callback_url at once and delivers a signed image.completed whose link serves the image', async () => {
    const prompt = 'an asynchronous lighthouse';
    const id = await h.jobs.image(h.receiver.url('/upstream-completed'), prompt);
    const [request] = await eventually(
      () => {
        const got = h.receiver.requestsTo('/upstream-completed');
        return got.length > 0 ? got : undefined;
      },
      30_000,
      'the image.completed callback',
    );
    const envelope = verify(request!.body, request!.headers, h.workspace.signingSecret) as any;
    expect(envelope).toMatchObject({ type: 'image.completed', data: { id, status: 'completed', error: null } });
    expect(envelope.data.cost).toBeGreaterThan(0);
    const link = await fetch(envelope.data.data[0].url);
    expect(link.status).toBe(200);
    expect(Buffer.from(await link.arrayBuffer()).equals(madeFor(prompt))).toBe(true);
  });

  it('calls back image.failed, uncharged, when the model server refuses the prompt', async () => {
    upstream.script('images.generations', () => apiError(400, 'Your request was rejected by the safety system.', { code: 'moderation_blocked' }));
    const id = await h.jobs.image(h.receiver.url('/upstream-failed'), 'a refused prompt');
    const [request] = await eventually(
      () => {
        const got = h.receiver.requestsTo('/upstream-failed');
        return got.length > 0 ? got : undefined;
      },
      30_000,
      'the image.failed callback',
    );
    const envelope = verify(request!.body, request!.headers, h.workspace.signingSecret) as any;
    expect(envelope).toMatchObject({
      type: 'image.failed',
      data: {
        id,
        status: 'failed',
        cost: null,
        error: { code: 'moderation_blocked', message: 'The model server refused the request: Your request was rejected by the safety system.' },
      },
    });
    expect((await h.stack.jobs.ledger(h.workspace.workspaceId)).filter((e) => e.job_id === id)).toEqual([]);
  });
});
