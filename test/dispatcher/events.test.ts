import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { createLogger } from '@media/common';
import { jobIds, JobQueue } from '@media/queues';
import { verify } from '@media/callback-signing';
import { CallbackNotFoundError } from '@media/callbacks';
import { eventually } from '../support/stack';
import { DispatcherHarness } from './support/harness';
import { JobClient } from './support/jobs';
import type { ReceivedRequest } from './support/receiver';

/**
 * The four events end to end: real gateway, generator and dispatcher processes, real Redis, and a
 * real HTTPS receiver on loopback that checks every delivery with three independent verifiers.
 */
let h: DispatcherHarness;

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '300ms,600ms,900ms,1200ms,1500ms', WEBHOOK_TIMEOUT_MS: '10000' }, { inProcess: true });
});

afterAll(async () => {
  await h?.stop();
});

/** Checks a delivery with our verify(), the standardwebhooks library and openai's webhooks.unwrap(). */
async function verifyEverywhere(request: ReceivedRequest, secret: string): Promise<unknown> {
  const headers = request.headers;
  const ours = verify(request.body, headers, secret);
  const standard = new Webhook(secret).verify(request.body, headers);
  const openai = await new OpenAI({ apiKey: 'unused', webhookSecret: secret }).webhooks.unwrap(request.body, headers);
  expect(standard).toEqual(ours);
  expect(openai).toEqual(ours);
  return ours;
}

/** Links are minted per render; compare the rest of the object exactly. */
function withoutLinkParams(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v) => {
    if (key === 'url_expires_at') return typeof v === 'number' ? 'n' : v;
    return typeof v === 'string' && v.includes('/v1/files/') ? v.replace(/\?.*$/, '') : v;
  });
}

describe('callback events', () => {
  it('delivers image.completed, image.failed, video.completed and video.failed, each verifiable by three libraries, while a slow receiver hangs', async () => {
    // A receiver that never answers, first in line: the others must not wait for it.
    h.receiver.script('/slow', () => 'hang');
    const slowJob = await h.jobs.image(h.receiver.url('/slow'), 'a slow receiver');

    const jobs = {
      'image.completed': await h.jobs.image(h.receiver.url('/image-ok'), 'a red kite', { response_format: 'b64_json' }),
      'image.failed': await h.jobs.image(h.receiver.url('/image-failed'), 'something forbidden'),
      'video.completed': await h.jobs.video(h.receiver.url('/video-ok'), 'waves on a beach'),
      'video.failed': await h.jobs.video(h.receiver.url('/video-failed'), 'a forbidden scene'),
    };
    const paths: Record<keyof typeof jobs, string> = {
      'image.completed': '/image-ok',
      'image.failed': '/image-failed',
      'video.completed': '/video-ok',
      'video.failed': '/video-failed',
    };

    for (const [type, jobId] of Object.entries(jobs) as [keyof typeof jobs, string][]) {
      const [request] = await eventually(
        () => {
          const got = h.receiver.requestsTo(paths[type]);
          return got.length > 0 ? got : undefined;
        },
        30_000,
        `${type} callback`,
      );
      const messageId = await h.messageIdOf(jobId);
      const stored = (await h.stack.jobs.get(jobId))!;

      expect(request.method).toBe('POST');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toBe('Service-Webhooks/1.0 (+https://docs.media.test/webhooks)');
      expect(request.headers['webhook-id']).toBe(messageId);
      expect(messageId).toMatch(/^msg_[a-z0-9]{25}$/);
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);

      const envelope = (await verifyEverywhere(request, h.workspace.signingSecret)) as any;
      expect(Object.keys(envelope)).toEqual(['type', 'timestamp', 'data']);
      expect(envelope.type).toBe(type);
      expect(envelope.timestamp).toBe(new Date(stored.finished_ms!).toISOString());
      expect(envelope.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // The job exactly as GET shows it, always with links, never base64.
      expect(withoutLinkParams(envelope.data)).toEqual(withoutLinkParams(await h.jobs.get(jobId)));
      expect(request.body).not.toContain('b64_json');

      if (type === 'image.completed') {
        expect(envelope.data.status).toBe('completed');
        expect(envelope.data.data).toHaveLength(1);
        const link = await fetch(envelope.data.data[0].url);
        expect(link.status).toBe(200);
        expect(link.headers.get('content-type')).toMatch(/^image\//);
      } else if (type === 'video.completed') {
        expect(envelope.data.status).toBe('completed');
        const link = await fetch(envelope.data.url, { method: 'HEAD' });
        expect(link.status).toBe(200);
      } else {
        expect(envelope.data.status).toBe('failed');
        expect(envelope.data.error).toEqual({ code: 'moderation_blocked', message: expect.any(String) });
        expect(envelope.data.cost).toBeNull();
      }

      const { callback, attempts } = await h.settled(messageId, ['delivered']);
      expect(callback).toMatchObject({ type, job_id: jobId, workspace_id: h.workspace.workspaceId, url: h.receiver.url(paths[type]) });
      expect(callback).toMatchObject({ attempt_count: 1, ladder_attempt: 1, next_attempt_ms: null });
      expect(attempts).toEqual([
        expect.objectContaining({ number: 1, ladder_attempt: 1, trigger: 'scheduled', status: 200, error: null, address: '127.0.0.1', excerpt: 'ok' }),
      ]);
    }

    // All four went through while the slow receiver still holds its first attempt.
    const slow = await h.callbacks.get(await h.messageIdOf(slowJob));
    expect(slow).toMatchObject({ state: 'pending', attempt_count: 0 });
    expect(h.receiver.requestsTo('/slow')).toHaveLength(1);
  });

  it('finishes and calls back jobs whose prompt holds invalid Unicode of every kind', async () => {
    // Lone high, lone low, reversed pair, NUL and a noncharacter: JSON escapes that decode to strings
    // no UTF-8 text holds. The API accepts the prose as well-formed text; every step after it must cope.
    const prompts = ['\ud800 dusk', 'sea \udfff', '\udc00\ud800', 'nul \u0000 here', 'non \uffff char'];
    const ids = [];
    for (const [i, prompt] of prompts.entries()) ids.push(await h.jobs.image(h.receiver.url(`/unicode-${i}`), prompt));
    ids.push(await h.jobs.video(h.receiver.url('/unicode-video'), '\ud83d lone half of an emoji'));
    for (const id of ids) {
      const messageId = await h.messageIdOf(id);
      const { callback } = await h.settled(messageId, ['delivered']);
      expect(callback.type).toMatch(/\.completed$/);
      expect((await h.stack.jobs.get(id))!.prompt.isWellFormed()).toBe(true);
    }
  });

  it('indexes callbacks per workspace and makes none for a job without callback_url', async () => {
    const syncJob = await h.jobs.syncImage();
    await h.eventHandled(jobIds.jobFinished(syncJob));
    const page = await h.callbacks.list(h.workspace.workspaceId, { limit: 100 });
    expect(page.callbacks.length).toBeGreaterThanOrEqual(5);
    expect(page.callbacks.every((c) => c.workspace_id === h.workspace.workspaceId)).toBe(true);
    expect(page.callbacks.some((c) => c.job_id === syncJob)).toBe(false);
  });

  it('makes no second callback when a job-finished event is replayed', async () => {
    const jobId = await h.jobs.image(h.receiver.url('/replay'));
    const messageId = await h.messageIdOf(jobId);
    await h.settled(messageId, ['delivered']);

    // A replay under a new queue id, as if BullMQ's own de-duplication window had passed.
    const events = new JobQueue('job-events', h.stack.redis, h.stack.prefix, createLogger('test', 'error'));
    try {
      await events.add('job-finished', { jobId }, { jobId: `replay.${jobId}` });
    } finally {
      await events.close();
    }
    await h.eventHandled(`replay.${jobId}`);
    const { callback } = await h.settled(messageId, ['delivered']);
    expect(callback.attempt_count).toBe(1);
    expect(h.receiver.requestsTo('/replay')).toHaveLength(1);
  });

  it('signs with both secrets during a rotation overlap, each signature valid on its own', async () => {
    const ws = await h.stack.createWorkspace('rotation');
    const rotated = { signing_secret: (await h.stack.accounts.rotateSecret(ws.workspaceId)).current.secret };
    const jobs = new JobClient(h.stack, ws.apiKey);
    await jobs.image(h.receiver.url('/rotated'));
    const [request] = await eventually(
      () => {
        const got = h.receiver.requestsTo('/rotated');
        return got.length > 0 ? got : undefined;
      },
      30_000,
      'rotated callback',
    );

    const entries = (request.headers['webhook-signature'] as string).split(' ');
    expect(entries).toHaveLength(2);
    // Current secret first, then the one inside its overlap.
    for (const [index, secret] of [rotated.signing_secret, ws.signingSecret].entries()) {
      const alone = { ...request, headers: { ...request.headers, 'webhook-signature': entries[index] } };
      await verifyEverywhere(alone, secret);
      expect(() => verify(alone.body, alone.headers, index === 0 ? ws.signingSecret : rotated.signing_secret)).toThrow('No matching webhook signature');
      // And a receiver holding either secret accepts the header as sent.
      await verifyEverywhere(request, secret);
    }
  });

  it('retries a delivered callback by hand, in its own workspace only, and from the admin CLI', async () => {
    const jobId = await h.jobs.image(h.receiver.url('/manual-delivered'));
    const messageId = await h.messageIdOf(jobId);
    await h.settled(messageId, ['delivered']);
    const service = h.callbackAdmin();

    const other = await h.stack.createWorkspace('other');
    await expect(service.retryNow(other.workspaceId, messageId)).rejects.toBeInstanceOf(CallbackNotFoundError);
    await expect(service.retryNow(h.workspace.workspaceId, 'msg_doesnotexist')).rejects.toBeInstanceOf(CallbackNotFoundError);

    const request = await service.retryNow(h.workspace.workspaceId, messageId);
    expect(request.message_id).toBe(messageId);
    const attempt = await eventually(() => service.findManualAttempt(messageId, request.request_id), 10_000, 'manual attempt');
    expect(attempt).toMatchObject({ number: 2, trigger: 'manual', ladder_attempt: null, status: 200, error: null });

    const cli = await h.admin(['retry-callback', '--id', messageId]);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const printed = JSON.parse(cli.stdout);
    expect(printed).toMatchObject({
      message_id: messageId,
      state: 'delivered',
      attempts: 3,
      attempt: { number: 3, trigger: 'manual', status: 200, error: null },
    });

    const deliveries = h.receiver.requestsTo('/manual-delivered');
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
    const { callback } = await h.settled(messageId, ['delivered']);
    expect(callback).toMatchObject({ state: 'delivered', attempt_count: 3, ladder_attempt: 1, next_attempt_ms: null });
  });
});
