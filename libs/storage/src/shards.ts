import type { Redis } from 'ioredis';
import { shardOfId } from '@media/domain';

/** Ids grouped by the store shard they name (keys.ts): a command that takes many keys must keep them in one slot. */
export function groupByShard(ids: readonly string[]): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const id of ids) {
    const shard = shardOfId(id);
    const group = groups.get(shard);
    if (group) group.push(id);
    else groups.set(shard, [id]);
  }
  return groups;
}

/**
 * The values of the records named by `ids`, in their order (null where there is none): one MGET per
 * shard the ids name, sent together. A page of one workspace's ids is one MGET.
 */
export async function mgetByShard(redis: Redis, ids: readonly string[], keyOf: (id: string) => string): Promise<(string | null)[]> {
  const groups = groupByShard(ids);
  if (groups.size <= 1) return ids.length === 0 ? [] : redis.mget(ids.map(keyOf));
  const found = new Map<string, string | null>();
  await Promise.all(
    [...groups.values()].map(async (group) => {
      const values = await redis.mget(group.map(keyOf));
      group.forEach((id, i) => found.set(id, values[i] ?? null));
    }),
  );
  return ids.map((id) => found.get(id) ?? null);
}
