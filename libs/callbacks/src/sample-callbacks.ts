import { setTimeout as sleep } from 'node:timers/promises';
import type { JobQueue } from '@media/queues';
import { newId, type EventType } from '@media/domain';
import type { TestCallbackOutcome, TestCallbackRepository } from './sample-callback-store';
import { CallbackUrlRejectedError } from '@media/callback-guard';
import type { RelayDirectory } from './relay';

/** How often the outcome is looked for while waiting; a receiver's answer takes at least a TLS handshake. */
const POLL_MS = 100;
/** What the wait allows beyond the receiver's own time limit, for the dispatcher to pick the job up. */
export const TEST_CALLBACK_PICKUP_ALLOWANCE_MS = 5_000;

export interface TestCallbacksDeps {
  store: TestCallbackRepository;
  deliveries: Pick<JobQueue<'callback-deliveries'>, 'add'>;
  /** The URL rules of real callbacks; throws `CallbackUrlRejectedError` for a refused URL. */
  guard: { check(url: string): Promise<unknown> };
  /** Relay URLs: a test to the workspace's own goes through its listener, like a real callback. */
  relays?: Pick<RelayDirectory, 'isRelayUrl' | 'ownsRelayUrl'>;
  /** WEBHOOK_TIMEOUT_MS: the receiver's time limit. */
  webhookTimeoutMs: number;
  now?: () => number;
}

/**
 * "Send test callback": a signed sample event (an `image.completed`, or the type asked for) to a URL the user gives, with the same URL
 * rules and signing as real callbacks. Only the dispatcher calls receivers, so this stores the
 * request, queues a `test-callback` job and waits for the dispatcher's outcome. Nothing is written
 * to any callback's attempt log.
 */
export class TestCallbacks {
  private readonly now: () => number;

  constructor(private readonly deps: TestCallbacksDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Checks the URL here first (a refusal is the caller's 400, with no job queued), then sends.
   *
   * @throws CallbackUrlRejectedError when the URL rules refuse it
   * @returns the outcome, or undefined when no dispatcher answered in time
   */
  async send(workspaceId: string, url: string, type?: EventType): Promise<TestCallbackOutcome | undefined> {
    if (this.deps.relays?.isRelayUrl(url)) {
      if (!(await this.deps.relays.ownsRelayUrl(workspaceId, url)))
        throw new CallbackUrlRejectedError('malformed', "The URL is a relay URL, but not this workspace's (see `media-callbacks listen`).");
    } else {
      await this.deps.guard.check(url);
    }
    const testId = newId('tcb');
    await this.deps.store.request(testId, { workspace_id: workspaceId, url, created_ms: this.now(), ...(type ? { type } : {}) });
    // lifo: someone is waiting on the page.
    await this.deps.deliveries.add('test-callback', { testId }, { jobId: `test.${testId}`, lifo: true });
    const deadline = this.now() + this.deps.webhookTimeoutMs + TEST_CALLBACK_PICKUP_ALLOWANCE_MS;
    for (;;) {
      const outcome = await this.deps.store.outcome(testId);
      if (outcome) return outcome;
      if (this.now() >= deadline) return undefined;
      await sleep(POLL_MS);
    }
  }
}
