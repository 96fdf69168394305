import type { NextFunction, Request, Response } from 'express';
import type { DashboardBucket, LimitRepository, RateBucket, RateVerdict } from '@media/jobs';
import { ApiError } from './api-error';

/**
 * OpenAI's format for `x-ratelimit-reset-*`: `250ms`, `42s`, `1m0s`, `2h3m4s`. Rounded up to the
 * unit shown, so that a client which waits that long finds the window open again.
 */
export function formatResetDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const total = Math.ceil(ms / 1_000);
  const hours = Math.floor(total / 3_600);
  const minutes = Math.floor((total % 3_600) / 60);
  const seconds = total % 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/**
 * One middleware per bucket; put it on a route (or a whole router) after `requireApiKey`. Generic
 * in the route parameters so that it leaves Express's typing of `req.params` to the route path.
 */
export type RateLimit = <P>(req: Request<P>, res: Response, next: NextFunction) => Promise<void>;
export type RateLimits = { [B in RateBucket]: RateLimit };

/**
 * Per-workspace request limits (design section 2). Every response of a limited route carries
 * OpenAI's `x-ratelimit-*-requests` headers, errors included; over the limit the call is a 429
 * with `Retry-After` and does no work.
 */
export function rateLimits(limits: LimitRepository): RateLimits {
  const bucket =
    (name: RateBucket): RateLimit =>
    async (_req, res, next) => {
      answer(res, await limits.hit(res.locals.workspaceId, name), `${name} requests in this workspace`);
      next();
    };
  return { create: bucket('create'), read: bucket('read') };
}

/**
 * The dashboard's buckets: per member (`res.locals.memberKey`, set by the dashboard's session
 * check), apart from the workspace's API buckets, so that no amount of API traffic can keep an
 * owner from revoking a key or removing a member.
 */
export function dashboardRateLimits(limits: LimitRepository): { [B in DashboardBucket]: RateLimit } {
  const bucket =
    (name: DashboardBucket): RateLimit =>
    async (_req, res, next) => {
      answer(res, await limits.hitMember(res.locals.workspaceId, res.locals.memberKey!, name), `dashboard ${name}s by you`);
      next();
    };
  return { read: bucket('read'), write: bucket('write') };
}

/** OpenAI's headers on every limited response; over the limit, a 429 with `Retry-After` that does no work. */
function answer(res: Response, verdict: RateVerdict, what: string): void {
  res.setHeader('x-ratelimit-limit-requests', String(verdict.limit));
  res.setHeader('x-ratelimit-remaining-requests', String(verdict.remaining));
  res.setHeader('x-ratelimit-reset-requests', formatResetDuration(verdict.resetMs));
  if (!verdict.allowed) {
    const retryAfter = Math.max(1, Math.ceil(verdict.resetMs / 1_000));
    throw ApiError.rateLimited(`Rate limit reached for ${what}: ${verdict.limit} per minute. Try again in ${retryAfter} s.`, 'rate_limit_exceeded', retryAfter);
  }
}
