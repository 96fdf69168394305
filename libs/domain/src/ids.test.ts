import { derivedId, derivedIdBeside, LEGACY_SHARD, newId, newIdBeside, newWorkspaceId, rehomeId, shardOfId, shardOfName, STORE_SHARDS } from './ids';

describe('newId', () => {
  it('makes distinct ids of the documented form, across many refills of its pool of random bytes', () => {
    const ids = Array.from({ length: 5_000 }, () => newId('req'));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-z]{24}$/);
  });

  it('takes any length, longer than its pool too', () => {
    expect(newId('x', 16)).toMatch(/^x_[0-9a-z]{16}$/);
    expect(newId('x', 4_000)).toMatch(/^x_[0-9a-z]{4000}$/);
    expect(newId('x', 4_000)).not.toBe(newId('x', 4_000));
  });

  it('spreads over the whole alphabet', () => {
    const chars = new Set(Array.from({ length: 200 }, () => newId('a').slice(2)).join(''));
    expect(chars.size).toBe(36);
  });
});

describe('derivedId', () => {
  it('is the same for the same inputs', () => {
    expect(derivedId('gen', 'a', 'b')).toBe(derivedId('gen', 'a', 'b'));
    expect(derivedId('gen', 'a', 'b')).not.toBe(derivedId('gen', 'ab'));
  });
});

describe('store shards named by ids', () => {
  it('puts a new workspace on a shard drawn evenly, and what it owns on the same shard', () => {
    const counts = new Array<number>(STORE_SHARDS).fill(0);
    for (let i = 0; i < 3_200; i++) {
      const ws = newWorkspaceId();
      expect(ws).toMatch(/^ws_[0-9a-z]{24}[0-9a-f]$/);
      const shard = shardOfId(ws);
      counts[shard]! += 1;
      const video = newIdBeside(ws, 'video');
      expect(shardOfId(video)).toBe(shard);
      expect(shardOfId(derivedIdBeside(video, 'msg', video, 'video.completed'))).toBe(shard);
      expect(shardOfId(rehomeId(newId('req'), ws))).toBe(shard);
    }
    // 200 expected per shard; a uniform draw stays well inside this band.
    for (const count of counts) expect(count).toBeGreaterThan(120);
  });

  it('names the legacy shard for ids made before the split, and for anything not made here', () => {
    for (const id of [newId('ws'), newId('video'), derivedId('msg', 'x'), 'ws_', 'video_../../etc', `video_${'z'.repeat(25)}`, '']) {
      expect(shardOfId(id)).toBe(LEGACY_SHARD);
    }
    const legacyWorkspace = newId('ws');
    const video = newIdBeside(legacyWorkspace, 'video');
    expect(video).toMatch(/^video_[0-9a-z]{24}$/);
    expect(shardOfId(video)).toBe(LEGACY_SHARD);
  });

  it('moves a request id onto its workspace shard without changing the rest of it', () => {
    const request = newId('req');
    const ws = newWorkspaceId();
    const moved = rehomeId(request, ws);
    expect(moved.slice(0, -1)).toBe(request);
    expect(rehomeId(moved, ws)).toBe(moved);
    expect(rehomeId(moved, newId('ws'))).toBe(request);
  });

  it('spreads names over the shards', () => {
    const seen = new Set(Array.from({ length: 500 }, (_, i) => shardOfName(`dest_${i}`)));
    expect(seen.size).toBe(STORE_SHARDS);
  });
});
