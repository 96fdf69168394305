import { createHash, hash, type KeyObject } from 'node:crypto';
import type { Redis } from 'ioredis';
import { signingKeys, type SigningKeys } from '@media/callback-signing';
import { SecretBox, type StoreKeys } from '@media/storage';
import { AccountKeys } from './keys';
import { duplicateRedis } from '@media/common';
import { storeScript } from './lua';

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

/**
 * An ed25519 key pair that signs `v1a` entries: the `whsk_…` secret key (sealed at rest like the
 * signing secrets) and its `whpk_…` public key (public by nature, stored as it is).
 */
export interface SigningKeyPair {
  secret_key: string;
  public_key: string;
  created_ms: number;
  /** 0 while it is the current pair; otherwise when it stops signing. */
  expires_ms: number;
}

/** A key pair as anyone may see it: no secret key. */
export type PublicSigningKey = Omit<SigningKeyPair, 'secret_key'>;

/** What one attempt signs with: the HMAC secrets (`v1`) and the ed25519 secret keys (`v1a`, none when off), current first. */
export interface ActiveSigners {
  secrets: string[];
  secretKeys: string[];
  /** The same, decoded for signing. */
  keys: SigningKeys;
}

/** An API key as stored: never the key, only its SHA-256 and a recognisable prefix. */
export interface StoredApiKey {
  id: string;
  hash: string;
  /** The first characters of the key, e.g. `sk_AbC1…`. */
  prefix: string;
  created_ms: number;
}

export interface ApiKeyInfo extends StoredApiKey {
  last_used_ms: number | null;
}

/** What an API key authenticates as. */
export interface ApiKeyOwner {
  workspace_id: string;
  key_id: string;
  last_used_ms: number | null;
}

/** A dashboard member as stored; the password only as a hash (see `@media/accounts`). */
export interface StoredMember {
  email: string;
  role: Role;
  password_hash: string;
  /**
   * Changes whenever what a session was opened for no longer holds (the member's role changes, or
   * the member is made anew: removed and added again, a new password): a session stores the epoch
   * it was opened under and is void under any other. Absent on members stored before epochs.
   */
  session_epoch?: string;
}

export interface RotatedSecret {
  signing_secret: string;
  previous_secret_expires_at: string | null;
}

/** Outcome of a member change that must keep an owner. */
export type MemberChange = 'ok' | 'missing' | 'last_owner';

/** API keys carry 256 random bits, so one SHA-256 pass is enough to store them safely. */
export function hashApiKey(apiKey: string): string {
  return hash('sha256', apiKey);
}

/** Index keys take e-mails hashed: they are personal data, and any character may be in them. */
export const hashEmail = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('hex');

// lua/<name>.lua: each file's header gives the script's KEYS, ARGV, answers, and why it is one step.
const TOUCH_API_KEY = storeScript('api-key-touch');
const ROTATE = storeScript('secret-rotate');
const END_OVERLAP = storeScript('secret-end-overlap');
const CHANGE_MEMBER = storeScript('member-change');

/** What a workspace's secrets are bound to when sealed: a sealed secret moved to another workspace does not open. */
const secretOwner = (workspaceId: string) => `workspace:${workspaceId}`;
/** Likewise for its ed25519 secret keys, apart from the HMAC secrets: neither opens in the other's list. */
const signingKeyOwner = (workspaceId: string) => `workspace:${workspaceId}:ed25519`;

/** Those still signing at `now`, the current one first, then the one inside its rotation overlap. */
function stillSigning<T extends { expires_ms: number }>(list: T[], now: number): T[] {
  return list
    .filter((s) => s.expires_ms === 0 || s.expires_ms > now)
    .sort((a, b) => (a.expires_ms === 0 ? -1 : b.expires_ms === 0 ? 1 : b.expires_ms - a.expires_ms));
}

/**
 * How many workspaces' signing lists a repository keeps opened ({@link WorkspaceRepository.activeSigners});
 * past it they are all forgotten and opened again as they are used.
 */
const OPENED_SIGNERS_KEPT = 10_000;

/** One entry of a stored signing list (a secret or a key pair), opened and decoded the first time it signed. */
interface SignerEntry {
  sealed: string;
  expires_ms: number;
  opened?: { secret: string; key: KeyObject };
}

/** A workspace's two stored signing lists as last read: the stored values, and their entries. */
interface StoredSigners {
  secretsRaw: string | null;
  keysRaw: string | null;
  secrets: SignerEntry[];
  secretKeys: SignerEntry[];
}

/** A stored list; Lua's cjson writes an empty one as `{}`. */
function parseList<T>(raw: string | null): T[] {
  const parsed = raw ? (JSON.parse(raw) as unknown) : [];
  return Array.isArray(parsed) ? (parsed as T[]) : [];
}

/**
 * Workspaces, their hashed API keys, signing secrets and dashboard members: storage only. What is
 * stored is minted elsewhere (`@media/accounts`): keys, secrets and passwords never start here.
 */
export class WorkspaceRepository {
  /**
   * @param box - how signing secrets are kept at rest (sealed under SECRETS_ENCRYPTION_KEYS); the
   *   services and the admin CLI pass the configured one
   */
  private readonly accountKeys: AccountKeys;
  /**
   * The signing lists each workspace's attempts signed with lately, by workspace: an attempt reads
   * the stored values afresh, and opens and decodes them only when they differ from these (a
   * rotation, a revocation or a re-seal writes new values), so every change counts at once.
   */
  private readonly signers = new Map<string, StoredSigners>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    private readonly box: SecretBox = SecretBox.none(),
  ) {
    this.accountKeys = new AccountKeys(keys);
  }

  /** Stores a new workspace with its first API key, signing secret and owner, in one transaction. */
  async insert(workspace: Workspace, apiKey: StoredApiKey, secret: SigningSecret, owner: StoredMember): Promise<void> {
    const email = owner.email.toLowerCase();
    await this.redis
      .multi()
      .hset(this.accountKeys.workspace(workspace.id), { id: workspace.id, name: workspace.name, created_ms: String(workspace.created_ms) })
      .sadd(this.keys.workspaces(), workspace.id)
      .hset(this.accountKeys.apiKey(apiKey.hash), apiKeyFields(workspace.id, apiKey))
      .hset(this.accountKeys.workspaceApiKeys(workspace.id), apiKey.id, apiKey.hash)
      .set(this.accountKeys.workspaceSecrets(workspace.id), JSON.stringify([this.sealed(workspace.id, secret)]))
      .hset(this.accountKeys.workspaceMembers(workspace.id), email, JSON.stringify({ ...owner, email }))
      .sadd(this.accountKeys.memberWorkspaces(hashEmail(email)), workspace.id)
      .exec();
  }

  async get(id: string): Promise<Workspace | undefined> {
    const raw = await this.redis.hgetall(this.accountKeys.workspace(id));
    if (!raw.id) return undefined;
    return { id: raw.id, name: raw.name, created_ms: Number(raw.created_ms) };
  }

  async list(): Promise<string[]> {
    return this.redis.smembers(this.keys.workspaces());
  }

  /** The workspace an API key belongs to, or undefined. Only the key's hash is ever stored. */
  async findByApiKey(apiKey: string): Promise<string | undefined> {
    return (await this.lookupApiKey(apiKey))?.workspace_id;
  }

  /** Who an API key authenticates as, and when it was last seen (one round trip). */
  async lookupApiKey(apiKey: string): Promise<ApiKeyOwner | undefined> {
    const raw = await this.redis.hgetall(this.accountKeys.apiKey(hashApiKey(apiKey)));
    if (!raw.workspace_id) return undefined;
    return { workspace_id: raw.workspace_id, key_id: raw.key_id, last_used_ms: raw.last_used_ms ? Number(raw.last_used_ms) : null };
  }

  /** Records a use of the key; callers throttle it (see `@media/accounts`), so it is not a write per request. */
  async touchApiKey(apiKey: string, now: number): Promise<void> {
    // HSET on a revoked (deleted) key would bring back a partial record; only touch what exists.
    await TOUCH_API_KEY.run(this.redis, [this.accountKeys.apiKey(hashApiKey(apiKey))], [now]);
  }

  async addApiKey(workspaceId: string, apiKey: StoredApiKey): Promise<void> {
    await this.redis
      .multi()
      .hset(this.accountKeys.apiKey(apiKey.hash), apiKeyFields(workspaceId, apiKey))
      .hset(this.accountKeys.workspaceApiKeys(workspaceId), apiKey.id, apiKey.hash)
      .exec();
  }

  /** The workspace's API keys, oldest first. */
  async apiKeys(workspaceId: string): Promise<ApiKeyInfo[]> {
    const index = await this.redis.hgetall(this.accountKeys.workspaceApiKeys(workspaceId));
    const entries = Object.entries(index);
    if (entries.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const [, hash] of entries) pipeline.hgetall(this.accountKeys.apiKey(hash));
    const results = (await pipeline.exec()) ?? [];
    const keys: ApiKeyInfo[] = [];
    entries.forEach(([id, hash], i) => {
      const [error, raw] = results[i] as [Error | null, Record<string, string>];
      if (error) throw error;
      if (!raw.workspace_id) return;
      keys.push({
        id,
        hash,
        prefix: raw.prefix ?? raw.hint ?? '',
        created_ms: Number(raw.created_ms),
        last_used_ms: raw.last_used_ms ? Number(raw.last_used_ms) : null,
      });
    });
    return keys.sort((a, b) => a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
  }

  /** Deletes the key at once; false when the workspace has no key with that id (another workspace's included). */
  async revokeApiKey(workspaceId: string, keyId: string): Promise<boolean> {
    const hash = await this.redis.hget(this.accountKeys.workspaceApiKeys(workspaceId), keyId);
    if (!hash) return false;
    await this.redis.multi().del(this.accountKeys.apiKey(hash)).hdel(this.accountKeys.workspaceApiKeys(workspaceId), keyId).exec();
    return true;
  }

  /** Secrets that sign now, with their times: the current one first, then any still inside its rotation overlap. */
  async signingSecrets(workspaceId: string, now = Date.now()): Promise<SigningSecret[]> {
    return this.openSecrets(workspaceId, await this.redis.get(this.accountKeys.workspaceSecrets(workspaceId)), now);
  }

  private openSecrets(workspaceId: string, raw: string | null, now: number): SigningSecret[] {
    return stillSigning(parseList<SigningSecret>(raw), now).map((s) => ({ ...s, secret: this.box.open(s.secret, secretOwner(workspaceId)) }));
  }

  /** The public halves of the key pairs that sign now; no secret key is opened (the unauthenticated key listing reads this). */
  async publicSigningKeys(workspaceId: string, now = Date.now()): Promise<PublicSigningKey[]> {
    const raw = await this.redis.get(this.accountKeys.workspaceSigningKeys(workspaceId));
    return stillSigning(parseList<SigningKeyPair>(raw), now).map(({ public_key, created_ms, expires_ms }) => ({ public_key, created_ms, expires_ms }));
  }

  /**
   * Everything an attempt signs with, read in one round trip. Each entry is opened (unsealed) and
   * decoded for signing once per stored value, not on every attempt: see {@link signers}.
   */
  async activeSigners(workspaceId: string, now = Date.now()): Promise<ActiveSigners> {
    const [secretsRaw, keysRaw] = await this.redis.mget(this.accountKeys.workspaceSecrets(workspaceId), this.accountKeys.workspaceSigningKeys(workspaceId));
    let stored = this.signers.get(workspaceId);
    if (!stored || stored.secretsRaw !== secretsRaw || stored.keysRaw !== keysRaw) {
      stored = {
        secretsRaw,
        keysRaw,
        secrets: parseList<SigningSecret>(secretsRaw).map((s) => ({ sealed: s.secret, expires_ms: s.expires_ms })),
        secretKeys: parseList<SigningKeyPair>(keysRaw).map((k) => ({ sealed: k.secret_key, expires_ms: k.expires_ms })),
      };
      if (this.signers.size >= OPENED_SIGNERS_KEPT) this.signers.clear();
      this.signers.set(workspaceId, stored);
    }
    const secrets = stillSigning(stored.secrets, now).map((e) => (e.opened ??= this.openSecret(workspaceId, e.sealed)));
    const secretKeys = stillSigning(stored.secretKeys, now).map((e) => (e.opened ??= this.openSecretKey(workspaceId, e.sealed)));
    return {
      secrets: secrets.map((s) => s.secret),
      secretKeys: secretKeys.map((k) => k.secret),
      keys: { secrets: secrets.map((s) => s.key), secretKeys: secretKeys.map((k) => k.key) },
    };
  }

  /** One of the workspace's HMAC signing secrets, opened and decoded. */
  private openSecret(workspaceId: string, sealed: string): { secret: string; key: KeyObject } {
    const secret = this.box.open(sealed, secretOwner(workspaceId));
    return { secret, key: signingKeys([secret]).secrets[0]! };
  }

  /** An ed25519 secret key of the workspace's key pairs, opened and decoded (asymmetric signing is off while it has none). */
  private openSecretKey(workspaceId: string, sealed: string): { secret: string; key: KeyObject } {
    const secret = this.box.open(sealed, signingKeyOwner(workspaceId));
    return { secret, key: signingKeys([], [secret]).secretKeys[0]! };
  }

  /**
   * Stores `pair` (minted by the caller) as the workspace's first signing key pair; false, and
   * nothing written, when the workspace has one already (turning it on twice keeps the first key).
   */
  async addFirstSigningKey(workspaceId: string, pair: SigningKeyPair): Promise<boolean> {
    const sealed = { ...pair, secret_key: this.box.seal(pair.secret_key, signingKeyOwner(workspaceId)) };
    return (await this.redis.set(this.accountKeys.workspaceSigningKeys(workspaceId), JSON.stringify([sealed]), 'NX')) === 'OK';
  }

  /**
   * Makes `pair` the current signing key pair; the previous one keeps signing for `overlapSeconds`,
   * as {@link rotateSecret} does for the HMAC secret. Returns when the previous pair stops signing (ms), 0 when none.
   */
  async rotateSigningKey(workspaceId: string, pair: SigningKeyPair, overlapSeconds: number, now = Date.now()): Promise<number> {
    const entry = { ...pair, secret_key: this.box.seal(pair.secret_key, signingKeyOwner(workspaceId)), created_ms: now, expires_ms: 0 };
    return (await ROTATE.run(this.redis, [this.accountKeys.workspaceSigningKeys(workspaceId)], [JSON.stringify(entry), now, overlapSeconds * 1000])) as number;
  }

  /**
   * Seals every secret of the workspace (HMAC secrets and ed25519 secret keys) under the newest
   * key-encryption key (those stored before sealing, and those sealed under an older key).
   * Compare-and-set: a rotation meanwhile makes it start over. Returns whether anything was rewritten.
   */
  async resealSecrets(workspaceId: string): Promise<boolean> {
    const secrets = await this.reseal<SigningSecret>(this.accountKeys.workspaceSecrets(workspaceId), 'secret', secretOwner(workspaceId));
    const keys = await this.reseal<SigningKeyPair>(this.accountKeys.workspaceSigningKeys(workspaceId), 'secret_key', signingKeyOwner(workspaceId));
    return secrets || keys;
  }

  private async reseal<T extends object>(key: string, field: keyof T & string, owner: string): Promise<boolean> {
    for (;;) {
      const watching = duplicateRedis(this.redis, {});
      try {
        await watching.watch(key);
        const raw = await watching.get(key);
        if (!raw) return false;
        const list = parseList<Record<string, string>>(raw);
        if (list.every((s) => this.box.isCurrent(s[field]))) return false;
        const resealed = list.map((s) => ({ ...s, [field]: this.box.seal(this.box.open(s[field], owner), owner) }));
        if (await watching.multi().set(key, JSON.stringify(resealed)).exec()) return true;
      } finally {
        watching.disconnect();
      }
    }
  }

  private sealed(workspaceId: string, secret: SigningSecret): SigningSecret {
    return { ...secret, secret: this.box.seal(secret.secret, secretOwner(workspaceId)) };
  }

  /** Secrets that sign now: the current one first, then any still inside its rotation overlap. */
  async activeSecrets(workspaceId: string, now = Date.now()): Promise<string[]> {
    return (await this.signingSecrets(workspaceId, now)).map((s) => s.secret);
  }

  /** Makes `secret` (minted by the caller) current; the previous one keeps signing for `overlapSeconds`. */
  async rotateSecret(workspaceId: string, secret: string, overlapSeconds: number, now = Date.now()): Promise<RotatedSecret> {
    if (!(await this.get(workspaceId))) throw new Error(`no workspace ${workspaceId}`);
    const entry = this.sealed(workspaceId, { secret, created_ms: now, expires_ms: 0 });
    const ends = (await ROTATE.run(
      this.redis,
      [this.accountKeys.workspaceSecrets(workspaceId)],
      [JSON.stringify(entry), now, overlapSeconds * 1000],
    )) as number;
    return {
      signing_secret: secret,
      previous_secret_expires_at: ends > 0 && overlapSeconds > 0 ? new Date(ends).toISOString() : null,
    };
  }

  /** The previous secret stops signing now; only the current one is left. */
  async endSecretOverlap(workspaceId: string): Promise<void> {
    await END_OVERLAP.run(this.redis, [this.accountKeys.workspaceSecrets(workspaceId)], []);
  }

  async member(workspaceId: string, email: string): Promise<StoredMember | undefined> {
    const raw = await this.redis.hget(this.accountKeys.workspaceMembers(workspaceId), email.trim().toLowerCase());
    return raw ? (JSON.parse(raw) as StoredMember) : undefined;
  }

  /** Members sorted by e-mail. */
  async members(workspaceId: string): Promise<StoredMember[]> {
    const raw = await this.redis.hvals(this.accountKeys.workspaceMembers(workspaceId));
    return raw.map((r) => JSON.parse(r) as StoredMember).sort((a, b) => (a.email < b.email ? -1 : 1));
  }

  /** Workspaces the e-mail is a member of. */
  async workspacesOfMember(email: string): Promise<string[]> {
    return (await this.redis.smembers(this.accountKeys.memberWorkspaces(hashEmail(email)))).sort();
  }

  /** Adds a member; false (nothing written) when the e-mail is already a member of the workspace. */
  async addMember(workspaceId: string, member: StoredMember): Promise<boolean> {
    const email = member.email.trim().toLowerCase();
    const [[error, added]] = (await this.redis
      .multi()
      .hsetnx(this.accountKeys.workspaceMembers(workspaceId), email, JSON.stringify({ ...member, email }))
      .sadd(this.accountKeys.memberWorkspaces(hashEmail(email)), workspaceId)
      .exec()) as [[Error | null, number], ...unknown[]];
    if (error) throw error;
    return added === 1;
  }

  /**
   * Sets a member's role with a new session epoch (`null` removes the member), never leaving the
   * workspace without an owner.
   */
  async changeMember(workspaceId: string, email: string, change: { role: Role; sessionEpoch: string } | null): Promise<MemberChange> {
    const normalized = email.trim().toLowerCase();
    return (await CHANGE_MEMBER.run(
      this.redis,
      [this.accountKeys.workspaceMembers(workspaceId), this.accountKeys.memberWorkspaces(hashEmail(normalized))],
      [normalized, change?.role ?? '', workspaceId, change?.sessionEpoch ?? ''],
    )) as MemberChange;
  }
}

function apiKeyFields(workspaceId: string, key: StoredApiKey): Record<string, string> {
  return { workspace_id: workspaceId, key_id: key.id, prefix: key.prefix, created_ms: String(key.created_ms) };
}
