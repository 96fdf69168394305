import type { Redis } from 'ioredis';
import type { EventType } from '@media/domain';
import type { StoreKeys } from '@media/storage';
import { CallbackKeys } from './keys';

/** A test callback the dashboard asked the dispatcher to send. */
export interface TestCallbackRequest {
  workspace_id: string;
  url: string;
  /** The event it is a sample of; `image.completed` when not given. */
  type?: EventType;
  created_ms: number;
}

/** What came of it: the receiver's answer, as the dashboard shows it. */
export interface TestCallbackOutcome {
  webhook_id: string;
  delivered: boolean;
  status_code: number | null;
  /** The error class (`timeout`, `blocked_address`, `http_error`, …) or null when delivered. */
  error: string | null;
  duration_ms: number;
  address: string | null;
  response_excerpt: string;
}

/**
 * Test callbacks pass between the gateway (which asks and waits) and the dispatcher (the only
 * process that calls receivers) through two short-lived keys; the queue payload carries the id only.
 */
export class TestCallbackRepository {
  private readonly callbackKeys: CallbackKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    /** Long enough for the dispatcher to pick the request up and answer, short enough to leave nothing behind. */
    private readonly ttlSeconds = 300,
  ) {
    this.callbackKeys = new CallbackKeys(keys);
  }

  async request(id: string, request: TestCallbackRequest): Promise<void> {
    await this.redis.set(this.callbackKeys.testCallback(id), JSON.stringify(request), 'EX', this.ttlSeconds);
  }

  async getRequest(id: string): Promise<TestCallbackRequest | undefined> {
    const raw = await this.redis.get(this.callbackKeys.testCallback(id));
    return raw ? (JSON.parse(raw) as TestCallbackRequest) : undefined;
  }

  async saveOutcome(id: string, outcome: TestCallbackOutcome): Promise<void> {
    await this.redis.set(this.callbackKeys.testCallbackResult(id), JSON.stringify(outcome), 'EX', this.ttlSeconds);
  }

  async outcome(id: string): Promise<TestCallbackOutcome | undefined> {
    const raw = await this.redis.get(this.callbackKeys.testCallbackResult(id));
    return raw ? (JSON.parse(raw) as TestCallbackOutcome) : undefined;
  }
}
