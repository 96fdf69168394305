import type { Redis } from 'ioredis';
import { storeScript } from './lua';

const PAGE = storeScript('index-page');

/** A page of ids read from one sorted-set index. */
export interface IndexPage {
  ids: string[];
  hasMore: boolean;
  /**
   * False when `after` names no item of the list (removed over an hour ago, another list's or made
   * up): the page is then empty, and the caller says so rather than answer as if the list had ended
   * there.
   */
  cursorFound: boolean;
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
   * Where to look up, in turn, the score of an `after` id that is no longer in `key`: the index of
   * the whole list (a callback that left a state index while its list was being paged), and that
   * index's removed set (`StoreKeys.removedFrom`: an item deleted while its list was being paged).
   * The page then starts at that score. Each must share `key`'s hash slot.
   */
  cursorScoreKeys: string[];
}

/**
 * How long a listing index remembers an item removed from it after the latest removal, and how many
 * it remembers at most, the latest removed (lua/includes/list-removed.lua): long enough for a client
 * that deletes what it pages through to ask for its next page, and bounded for one that deletes
 * thousands.
 */
export const REMOVED_KEPT_MS = 60 * 60 * 1_000;
export const REMOVED_KEPT_MAX = 1_000;

/** One page of a sorted-set index whose scores are creation times (`lua/index-page.lua`), read in one step. */
export async function readIndexPage(redis: Redis, key: string, q: IndexPageQuery): Promise<IndexPage> {
  const bound = (n: number | undefined, open: string) => (n === undefined || !Number.isFinite(n) ? open : String(n));
  const [found, ...ids] = (await PAGE.run(
    redis,
    [key, ...q.cursorScoreKeys],
    [q.order, q.limit, q.after ?? '', bound(q.minScore, '-inf'), bound(q.maxScore, '+inf')],
  )) as [number, ...string[]];
  return { ids: ids.slice(0, q.limit), hasMore: ids.length > q.limit, cursorFound: found === 1 };
}
