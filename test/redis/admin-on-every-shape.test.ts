// The admin CLI reads the same Redis settings as the services: on Redis behind Sentinels (with the
// nodes' password) and on a TLS-only Redis it creates a workspace where the services will find it,
// and nothing lands on REDIS_URL's Redis.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { WorkspaceRepository } from '@media/accounts';
import { REDIS_URL } from '../support/stack';
import { TestRedisSentinel } from '../support/redis-sentinel';
import { TestRedisTls } from '../support/redis-tls';
import { allKeys } from '../support/store-keys';

const run = promisify(execFile);

async function createWorkspace(env: Record<string, string>, prefix: string): Promise<{ workspace_id: string; api_key: string }> {
  const { stdout } = await run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), 'create-workspace', '--name', 'shapes'], {
    env: { PATH: process.env.PATH, REDIS_URL, KEY_PREFIX: prefix, ...env },
  });
  return JSON.parse(stdout) as { workspace_id: string; api_key: string };
}

async function expectNothingOnRedisUrl(prefix: string): Promise<void> {
  const shared = new Redis(REDIS_URL);
  try {
    expect(await shared.keys(`${prefix}*`)).toEqual([]);
  } finally {
    shared.disconnect();
  }
}

it.each([
  ['Sentinels', () => TestRedisSentinel.start()],
  ['a TLS-only Redis', () => TestRedisTls.start()],
] as const)(
  'create-workspace on %s',
  async (_shape, start) => {
    const redis = await start();
    const client = redis.client();
    const prefix = `test-${randomBytes(6).toString('hex')}`;
    try {
      const out = await createWorkspace(redis.env, prefix);
      expect(await new WorkspaceRepository(client, allKeys(prefix)).findByApiKey(out.api_key)).toBe(out.workspace_id);
      await expectNothingOnRedisUrl(prefix);
    } finally {
      client.disconnect();
      await redis.destroy();
    }
  },
  60_000,
);
