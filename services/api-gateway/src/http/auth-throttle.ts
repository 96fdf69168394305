import { createHash } from 'node:crypto';
import type { Logger } from '@media/common';
import type { LimitRepository } from '@media/jobs';
import { ApiError } from './api-error';

/** Addresses remembered as refused at once, per process; the oldest are forgotten past it. */
const REMEMBERED = 10_000;

/**
 * Failed API-key authentications counted per client address over every gateway replica (Redis, a
 * fixed one-minute window). Past `perMinute` the address is refused with 429 until its window ends,
 * before its key is even looked at, so that guessing keys from one address is slow; addresses are
 * counted, never keys or workspaces, so a flood of wrong keys cannot lock a workspace's valid key
 * out from anywhere else. A replica remembers the addresses it refuses, so a refused request costs
 * no Redis call, and a valid key costs nothing here at all.
 */
export class FailedAuthThrottle {
  /** Refused addresses and until when (Unix ms). */
  private readonly refused = new Map<string, number>();

  constructor(
    private readonly limits: Pick<LimitRepository, 'noteFailedAuthentication'>,
    private readonly perMinute: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws the 429 when `address` is refused now. */
  check(address: string): void {
    const until = this.refused.get(address);
    if (until === undefined) return;
    const leftMs = until - this.now();
    if (leftMs <= 0) {
      this.refused.delete(address);
      return;
    }
    const retryAfter = Math.ceil(leftMs / 1000);
    throw ApiError.rateLimited(
      `Too many requests with a wrong or missing API key from your address: more than ${this.perMinute} a minute. Try again in ${retryAfter} s.`,
      'too_many_failed_authentications',
      retryAfter,
    );
  }

  /** Counts a failed authentication from `address`; the address is refused once past the bound. A count that cannot be made (Redis away) is let go. */
  async failed(address: string): Promise<void> {
    const counted = await this.limits.noteFailedAuthentication(createHash('sha256').update(address).digest('hex')).catch(() => undefined);
    if (!counted || counted.count <= this.perMinute || this.refused.has(address)) return;
    if (this.refused.size >= REMEMBERED) this.refused.delete(this.refused.keys().next().value!);
    this.refused.set(address, this.now() + counted.resetMs);
    this.logger.warn('failed authentications from one address over the bound; refusing it until its minute is over', {
      client_address: address,
      failures: counted.count,
      bound_per_minute: this.perMinute,
      refused_for_ms: counted.resetMs,
    });
  }
}
