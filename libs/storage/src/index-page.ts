import type { Redis } from 'ioredis';

/** A page of ids read from one sorted-set index. */
export interface IndexPage {
  ids: string[];
  hasMore: boolean;
}

export interface IndexPageQuery {
  limit: number;
  /** The id of the last item the client saw; the page starts after it. */
  after?: string;
  order: 'asc' | 'desc';
  /** Inclusive lower bound on the score (Unix ms). */
  minScore?: number;
  /** Exclusive upper bound on the score (Unix ms). */
  maxScore?: number;
  /**
   * Where to look up the score of an `after` id that is no longer in `key` (a callback that left a
   * state index while its list was being paged): the page then starts at that score.
   */
  cursorScoreKey?: string;
}

/**
 * One page of a sorted-set index (scores are creation times), by rank arithmetic only: the cursor,
 * the time bounds and the page are each one O(log n) lookup plus the page itself, so a page costs
 * the same on an index of ten items and of ten million.
 */
export async function readIndexPage(redis: Redis, key: string, q: IndexPageQuery): Promise<IndexPage> {
  const desc = q.order === 'desc';
  const min = q.minScore ?? Number.NEGATIVE_INFINITY;
  const max = q.maxScore ?? Number.POSITIVE_INFINITY;
  const bound = (n: number) => (Number.isFinite(n) ? String(n) : n > 0 ? '+inf' : '-inf');
  // The window of ranks that satisfies the time bounds, in the order of reading.
  const total = await redis.zcard(key);
  const below = Number.isFinite(min) ? await redis.zcount(key, '-inf', `(${min}`) : 0;
  const atOrAbove = Number.isFinite(max) ? await redis.zcount(key, bound(max), '+inf') : 0;
  let start = desc ? atOrAbove : below;
  const end = desc ? total - below - 1 : total - atOrAbove - 1;
  if (q.after) {
    const rank = desc ? await redis.zrevrank(key, q.after) : await redis.zrank(key, q.after);
    if (rank !== null) {
      start = Math.max(start, rank + 1);
    } else {
      const score = q.cursorScoreKey ? await redis.zscore(q.cursorScoreKey, q.after) : null;
      if (score === null) return { ids: [], hasMore: false };
      // Items strictly past the cursor's time; items created in the same millisecond may repeat.
      const passed = desc ? await redis.zcount(key, `(${score}`, '+inf') : await redis.zcount(key, '-inf', `(${score}`);
      start = Math.max(start, passed);
    }
  }
  if (start > end) return { ids: [], hasMore: false };
  const stop = Math.min(end, start + q.limit); // one extra to learn whether more follow
  const ids = desc ? await redis.zrevrange(key, start, stop) : await redis.zrange(key, start, stop);
  return { ids: ids.slice(0, q.limit), hasMore: ids.length > q.limit };
}
