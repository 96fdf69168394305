import type { JobRecord } from '@media/domain';
import { attemptResultWords, RequestsView, SEARCH_WINDOW } from './requests';

describe('attemptResultWords', () => {
  it('says an answer as its status and reason phrase, and an attempt without one as its error class in words', () => {
    expect(attemptResultWords({ status: 200, error: null })).toBe('200 OK');
    expect(attemptResultWords({ status: 500, error: 'http_error' })).toBe('500 Internal Server Error');
    expect(attemptResultWords({ status: 503, error: 'http_error' })).toBe('503 Service Unavailable');
    expect(attemptResultWords({ status: 301, error: 'redirect' })).toBe('301 Moved Permanently (redirect, not followed)');
    expect(attemptResultWords({ status: 599, error: 'http_error' })).toBe('599');
    expect(attemptResultWords({ status: null, error: 'timeout' })).toBe('timeout (no answer in time)');
    expect(attemptResultWords({ status: null, error: 'refused' })).toBe('connection refused');
    expect(attemptResultWords({ status: null, error: 'blocked_address' })).toBe('blocked address (not allowed)');
    expect(attemptResultWords({ status: null, error: 'dns' })).toBe('host name did not resolve');
  });
});

describe('RequestsView word search', () => {
  /** A workspace's requests as the job repository pages them (newest first by rank), counting the records read. */
  function workspace(jobs: { id: string; kind: 'image' | 'video'; created_ms: number; prompt: string }[]) {
    const records = jobs.map((j) => ({ ...j, workspace_id: 'ws_1', model: 'm', status: 'completed', cost: 0, callback_url: null }) as unknown as JobRecord);
    let read = 0;
    const byId = new Map(records.map((r) => [r.id, r]));
    /** Removed requests keep their place, as the listing's removed set keeps it. */
    const removed = new Map<string, JobRecord>();
    const view = new RequestsView({
      jobs: {
        list: async (_ws: string, kind: 'image' | 'video', opts: { limit: number; after?: string }) => {
          const ids = records
            .filter((r) => r.kind === kind && !removed.has(r.id))
            .sort((a, b) => b.created_ms - a.created_ms)
            .map((r) => r.id);
          const start = opts.after ? ids.indexOf(opts.after) + 1 : 0;
          return { ids: ids.slice(start, start + opts.limit), hasMore: ids.length > start + opts.limit };
        },
        getMany: async (ids: string[]) => {
          read += ids.length;
          return ids.map((id) => byId.get(id)!);
        },
        getForWorkspace: async (_ws: string, id: string) => (removed.has(id) ? undefined : byId.get(id)),
        placeOf: async (_ws: string, id: string) => {
          const job = byId.get(id);
          return job && { id, kind: job.kind, created_ms: job.created_ms };
        },
        ledger: async () => [],
      } as never,
      presenter: { render: () => ({}) } as never,
      callbackAdmin: { findMany: async () => [], lastAttempts: async () => new Map() } as never,
      destinations: { ofWorkspace: async () => [] },
      endpoints: { list: async () => [] },
      relays: { isRelayUrl: () => false },
    });
    return { view, read: () => read, remove: (id: string) => removed.set(id, byId.get(id)!) };
  }

  const many = (n: number, kind: 'image' | 'video', prompt: (i: number) => string, startMs = 0) =>
    Array.from({ length: n }, (_, i) => ({ id: `${kind === 'image' ? 'req' : 'video'}_${kind}${i}`, kind, created_ms: startMs + i * 2, prompt: prompt(i) }));

  it('looks through the newest 1,000 requests at most, however many the workspace has, and says it did not see them all', async () => {
    // The only match is the oldest request, out of reach.
    const ws = workspace([...many(2_500, 'image', (i) => (i === 0 ? 'a rare word' : `a sea ${i}`)), ...many(600, 'video', (i) => `a boat ${i}`, 1)]);
    const result = await ws.view.list('ws_1', { q: 'rare', limit: 20 });
    expect(result).toEqual({ data: [], has_more: false, search: { window: SEARCH_WINDOW, looked_through: SEARCH_WINDOW, complete: false } });
    // The records read are the window and at most a chunk more of each kind.
    expect(ws.read()).toBeLessThanOrEqual(SEARCH_WINDOW + 200);
  });

  it('merges images and videos newest first, stops once it has a page, and pages on with after', async () => {
    const ws = workspace([...many(300, 'image', (i) => `a Lighthouse ${i}`), ...many(300, 'video', (i) => `a lighthouse ${i}`, 1)]);
    const first = await ws.view.list('ws_1', { q: 'LIGHTHOUSE', limit: 3 });
    expect(first.data.map((r) => r.id)).toEqual(['video_video299', 'req_image299', 'video_video298']);
    expect(first.has_more).toBe(true);
    expect(first.search).toEqual({ window: SEARCH_WINDOW, looked_through: 4, complete: false });
    expect(ws.read()).toBeLessThanOrEqual(200);
    const second = await ws.view.list('ws_1', { q: 'lighthouse', limit: 3, after: 'video_video298' });
    expect(second.data.map((r) => r.id)).toEqual(['req_image298', 'video_video297', 'req_image297']);
    // Fewer matches than a page: every video read, and the search knows it saw them all.
    const all = await ws.view.list('ws_1', { q: 'lighthouse 29', kind: 'video', limit: 100 });
    expect(all.search).toEqual({ window: SEARCH_WINDOW, looked_through: 300, complete: true });
    expect(all.data).toHaveLength(11);
    // The request the page ended on deleted meanwhile: the next page is the same, from its place.
    ws.remove('video_video298');
    const afterRemoval = await ws.view.list('ws_1', { q: 'lighthouse', limit: 3, after: 'video_video298' });
    expect(afterRemoval.data.map((r) => r.id)).toEqual(second.data.map((r) => r.id));
    await expect(ws.view.list('ws_1', { q: 'lighthouse', limit: 3, after: 'video_never' })).rejects.toMatchObject({ status: 400 });
  });
});
