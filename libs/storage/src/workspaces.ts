import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { newId } from '@media/common';
import { generateSecret } from '@media/webhooks';
import type { StoreKeys } from './keys';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export type Role = 'owner' | 'admin' | 'member';

export interface Workspace {
  id: string;
  name: string;
  created_ms: number;
}

export interface SigningSecret {
  secret: string;
  created_ms: number;
  /** 0 while it is the current secret; otherwise when it stops signing. */
  expires_ms: number;
}

export interface NewWorkspace {
  workspace: Workspace;
  apiKey: string;
  signingSecret: string;
  owner: { email: string; password: string; role: Role };
}

export interface RotatedSecret {
  signing_secret: string;
  previous_secret_expires_at: string | null;
}

/** API keys carry 256 random bits, so one SHA-256 pass is enough to store them safely. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

// The previous current secret gets its end time; secrets whose time has passed are dropped.
const ROTATE = `
local list = {}
local raw = redis.call('GET', KEYS[1])
if raw then list = cjson.decode(raw) end
local now = tonumber(ARGV[2])
local out = { cjson.decode(ARGV[1]) }
local ends = 0
for _, s in ipairs(list) do
  if s.expires_ms == 0 then s.expires_ms = now + tonumber(ARGV[3]); ends = s.expires_ms end
  if s.expires_ms > now then table.insert(out, s) end
end
redis.call('SET', KEYS[1], cjson.encode(out))
return ends
`;

/** Workspaces, their hashed API keys, signing secrets and dashboard members. */
export class WorkspaceRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  async create(name: string, ownerEmail: string, now = Date.now()): Promise<NewWorkspace> {
    const workspace: Workspace = { id: newId('ws'), name, created_ms: now };
    const apiKey = `sk_${randomBytes(32).toString('base64url')}`;
    const signingSecret = generateSecret();
    const password = randomBytes(12).toString('base64url');
    const secrets: SigningSecret[] = [{ secret: signingSecret, created_ms: now, expires_ms: 0 }];
    const member = { email: ownerEmail, role: 'owner' as Role, password_hash: await hashPassword(password) };
    await this.redis
      .multi()
      .hset(this.keys.workspace(workspace.id), { id: workspace.id, name, created_ms: String(now) })
      .sadd(this.keys.workspaces(), workspace.id)
      .hset(this.keys.apiKey(hashApiKey(apiKey)), {
        workspace_id: workspace.id,
        key_id: newId('key'),
        hint: `${apiKey.slice(0, 7)}…${apiKey.slice(-4)}`,
        created_ms: String(now),
      })
      .set(this.keys.workspaceSecrets(workspace.id), JSON.stringify(secrets))
      .hset(this.keys.workspaceMembers(workspace.id), ownerEmail.toLowerCase(), JSON.stringify(member))
      .exec();
    return { workspace, apiKey, signingSecret, owner: { email: ownerEmail, password, role: 'owner' } };
  }

  async get(id: string): Promise<Workspace | undefined> {
    const raw = await this.redis.hgetall(this.keys.workspace(id));
    if (!raw.id) return undefined;
    return { id: raw.id, name: raw.name, created_ms: Number(raw.created_ms) };
  }

  async list(): Promise<string[]> {
    return this.redis.smembers(this.keys.workspaces());
  }

  /** The workspace an API key belongs to, or undefined. Only the key's hash is ever stored. */
  async findByApiKey(apiKey: string): Promise<string | undefined> {
    const id = await this.redis.hget(this.keys.apiKey(hashApiKey(apiKey)), 'workspace_id');
    return id ?? undefined;
  }

  /** Secrets that sign now: the current one first, then any still inside its rotation overlap. */
  async activeSecrets(workspaceId: string, now = Date.now()): Promise<string[]> {
    const raw = await this.redis.get(this.keys.workspaceSecrets(workspaceId));
    if (!raw) return [];
    const list = JSON.parse(raw) as SigningSecret[];
    return list.filter((s) => s.expires_ms === 0 || s.expires_ms > now).map((s) => s.secret);
  }

  /** Issues a new current secret; the previous one keeps signing for `overlapSeconds`. */
  async rotateSecret(workspaceId: string, overlapSeconds: number, now = Date.now()): Promise<RotatedSecret> {
    if (!(await this.get(workspaceId))) throw new Error(`no workspace ${workspaceId}`);
    const secret = generateSecret();
    const entry: SigningSecret = { secret, created_ms: now, expires_ms: 0 };
    const ends = (await this.redis.eval(
      ROTATE,
      1,
      this.keys.workspaceSecrets(workspaceId),
      JSON.stringify(entry),
      String(now),
      String(overlapSeconds * 1000),
    )) as number;
    return {
      signing_secret: secret,
      previous_secret_expires_at: ends > 0 && overlapSeconds > 0 ? new Date(ends).toISOString() : null,
    };
  }

  /** Checks dashboard credentials; the role on success. */
  async authenticateMember(workspaceId: string, email: string, password: string): Promise<Role | undefined> {
    const raw = await this.redis.hget(this.keys.workspaceMembers(workspaceId), email.toLowerCase());
    if (!raw) return undefined;
    const member = JSON.parse(raw) as { role: Role; password_hash: string };
    return (await verifyPassword(password, member.password_hash)) ? member.role : undefined;
  }

  async addMember(workspaceId: string, email: string, role: Role): Promise<string> {
    const password = randomBytes(12).toString('base64url');
    const member = { email, role, password_hash: await hashPassword(password) };
    await this.redis.hset(this.keys.workspaceMembers(workspaceId), email.toLowerCase(), JSON.stringify(member));
    return password;
  }
}

async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [, salt, hash] = stored.split('$');
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(expected, actual);
}
