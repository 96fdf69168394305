import { CallbackUrlRejectedError, type CheckedTarget } from '@media/callback-guard';
import { PermanentJobError, type Logger } from '@media/common';
import { newId, type EventType, type ImageRequestObject, type JobError, type VideoObject } from '@media/domain';
import type { TestCallbackOutcome, TestCallbackRepository } from './sample-callback-store';
import type { WorkspaceRepository } from '@media/accounts';
import { classifyRejection, classifyStatus } from './classify';
import { buildBody, buildHeaders } from './envelope';
import type { Exchange } from './exchange';
import type { RelaySender } from './relay';

export interface TestCallbackServiceDeps {
  store: Pick<TestCallbackRepository, 'getRequest' | 'saveOutcome'>;
  workspaces: Pick<WorkspaceRepository, 'activeSigners'>;
  guard: { check(url: string): Promise<CheckedTarget> };
  sender: { send(target: CheckedTarget, body: Buffer, headers: Record<string, string>): Promise<Exchange> };
  /** A test to a relay URL goes down a listener's connection, as a real callback does. */
  relay?: Pick<RelaySender, 'handles' | 'send'>;
  /** WEBHOOK_TIMEOUT_MS, for a test through the relay. */
  timeoutMs?: number;
  logger: Logger;
  docsUrl: string;
  now?: () => number;
}

/**
 * Sends the dashboard's test callbacks (a `test-callback` job): a sample `image.completed` event,
 * checked, signed and sent exactly as a real attempt is (same guard, envelope, signature headers and
 * sender), its outcome stored for the waiting dashboard. No callback record or attempt log is
 * touched: a test is not a delivery.
 */
export class TestCallbackService {
  private readonly now: () => number;

  constructor(private readonly deps: TestCallbackServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  async send(testId: string): Promise<TestCallbackOutcome | undefined> {
    const request = await this.deps.store.getRequest(testId);
    // Expired before a dispatcher got to it: nobody is waiting any more.
    if (!request) return undefined;
    const webhookId = newId('msg');
    const exchange = await this.exchange(request.workspace_id, request.url, webhookId, request.type ?? 'image.completed');
    const error = exchange.transportError ?? (exchange.status === null ? 'reset' : classifyStatus(exchange.status));
    const outcome: TestCallbackOutcome = {
      webhook_id: webhookId,
      delivered: error === null,
      status_code: exchange.status,
      error,
      duration_ms: exchange.durationMs,
      address: exchange.address,
      response_excerpt: exchange.excerpt,
    };
    await this.deps.store.saveOutcome(testId, outcome);
    this.deps.logger.info('test callback', { test_id: testId, workspace_id: request.workspace_id, trigger: 'test', status: exchange.status, error });
    return outcome;
  }

  private async exchange(workspaceId: string, url: string, webhookId: string, type: EventType): Promise<Exchange> {
    const checkedAt = this.now();
    if (this.deps.relay?.handles(url)) {
      const { body, headers } = await this.signed(workspaceId, url, webhookId, type);
      return this.deps.relay.send(
        workspaceId,
        url,
        { webhook_id: webhookId, event_type: type, headers, body: body.toString('utf8') },
        this.deps.timeoutMs ?? 15_000,
      );
    }
    let target: CheckedTarget;
    try {
      // Checked again here, as for every real attempt: DNS may have changed since the dashboard checked.
      target = await this.deps.guard.check(url);
    } catch (err) {
      if (!(err instanceof CallbackUrlRejectedError)) throw err;
      return {
        sentMs: checkedAt,
        durationMs: this.now() - checkedAt,
        status: null,
        transportError: classifyRejection(err),
        transportDetail: err.message,
        address: null,
        excerpt: '',
        retryAfterMs: null,
      };
    }
    const { body, headers } = await this.signed(workspaceId, url, webhookId, type);
    return this.deps.sender.send(target, body, headers);
  }

  /** A sample of `type`, signed now with the workspace's active secrets and keys. */
  private async signed(workspaceId: string, url: string, webhookId: string, type: EventType): Promise<{ body: Buffer; headers: Record<string, string> }> {
    const sentMs = this.now();
    const { secrets, keys } = await this.deps.workspaces.activeSigners(workspaceId, sentMs);
    if (secrets.length === 0) throw new PermanentJobError('no_signing_secret', `workspace ${workspaceId} has no signing secret`);
    const timestampSeconds = Math.floor(sentMs / 1000);
    const body = buildBody(type, sentMs, sampleObject(type, timestampSeconds, this.deps.docsUrl, url));
    return { body, headers: buildHeaders({ messageId: webhookId, timestampSeconds, body, keys, docsUrl: this.deps.docsUrl }) };
  }
}

/** A finished image request or video of the event's type, as the API renders one; its id says it is a test. */
function sampleObject(type: EventType, nowSeconds: number, docsUrl: string, callbackUrl: string): ImageRequestObject | VideoObject {
  const completed = type.endsWith('.completed');
  const error: JobError | null = completed ? null : { code: 'generation_failed', message: 'A sample failure: this is a test event.' };
  const suffix = newId('x', 16).slice(2);
  if (type.startsWith('video.')) {
    return {
      id: `video_test_${suffix}`,
      object: 'video',
      model: 'motion-1',
      status: completed ? 'completed' : 'failed',
      progress: 100,
      created_at: nowSeconds - 30,
      completed_at: nowSeconds,
      expires_at: nowSeconds + 86_400,
      seconds: 4,
      resolution: '720p',
      aspect_ratio: '16:9',
      size: '1280x720',
      generate_audio: false,
      prompt: 'A test event',
      remixed_from_video_id: null,
      url: completed ? `${docsUrl}/webhooks/sample.mp4` : null,
      url_expires_at: completed ? nowSeconds + 86_400 : null,
      cost: completed ? 0 : null,
      error,
      callback_url: callbackUrl,
    };
  }
  return {
    id: `req_test_${suffix}`,
    object: 'image.generation',
    created: nowSeconds,
    model: 'pixel-1',
    status: completed ? 'completed' : 'failed',
    created_at: nowSeconds - 3,
    completed_at: nowSeconds,
    data: completed ? [{ url: `${docsUrl}/webhooks/sample.png` }] : [],
    url_expires_at: completed ? nowSeconds + 86_400 : null,
    cost: completed ? 0 : null,
    error,
    callback_url: callbackUrl,
  };
}
