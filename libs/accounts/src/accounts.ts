import { timingSafeEqual } from 'node:crypto';
import { newWorkspaceId } from '@media/domain';
import {
  hashApiKey,
  type ApiKeyInfo,
  type PublicSigningKey,
  type Role,
  type SigningSecret,
  type StoredMember,
  type Workspace,
  type WorkspaceRepository,
} from './workspace-store';
import type { FailureCounter, SignInLimits, SessionRepository, StoredSession } from './session-store';
import {
  ApiKeyNotFoundError,
  AsymmetricSigningOffError,
  InvalidAccountInputError,
  InvalidCredentialsError,
  LastOwnerError,
  MemberExistsError,
  MemberNotFoundError,
  SignInThrottledError,
  WorkspaceNotFoundError,
} from './errors';
import { mint, sha256 } from './mint';
import { hashPassword, SCRYPT_PARAMS, verifyPasswords, type ScryptParams } from './passwords';
import { isRole } from './permissions';
import { OPERATOR, type AuditActor, type AuditLog } from './audit';

/** A session lasts this long without use; every authenticated request restarts the clock. */
export const SESSION_IDLE_SECONDS = 12 * 3600;
/** However active, a session ends this long after sign-in (a tab that polls must not keep one for ever). */
export const SESSION_MAX_SECONDS = 7 * 86_400;
/**
 * Sign-in failures (see `FailureCounter`): per client address a hard limit per window (spraying
 * many accounts; generous, as offices share addresses); per e-mail from one address a few free
 * tries, then a wait that doubles with each failure, up to a minute (guessing one account). Never a
 * lock per e-mail alone: anyone could then keep an owner out by failing on purpose, from anywhere.
 * Passwords are 96 random bits, so slowing a guesser is enough.
 */
export const SIGN_IN_LIMITS: SignInLimits = {
  failuresPerAddress: 50,
  windowSeconds: 15 * 60,
  freeFailuresPerEmailAndAddress: 5,
  firstWaitMs: 1_000,
  longestWaitMs: 60_000,
};
/** An API key's last use is written at most this often: one write a minute, not one per request. */
export const API_KEY_TOUCH_INTERVAL_MS = 60_000;
/**
 * How long a gateway trusts an API key it has looked up without asking Redis again. This is the
 * bound on revocation: a revoked key stops working at once on the process that revoked it (the
 * dashboard's gateway evicts it) and within this long on every other gateway.
 */
export const API_KEY_CACHE_MS = 2_000;
/** At most this many keys are remembered; the oldest lookup is forgotten first. */
export const API_KEY_CACHE_ENTRIES = 10_000;

// No spaces, no control characters (a NUL among them) and no other invisible ones (format
// characters: a right-to-left override made `Robert\u202Eevil@demo.local` read as another address),
// which no mailbox has and every screen that shows the address would have to guard against.
const EMAIL = /^[^\s@\p{C}]{1,64}@[^\s@\p{C}]{1,255}$/u;

export interface Credentials {
  email: string;
  password: string;
  role: Role;
}

export interface NewWorkspace {
  workspace: Workspace;
  apiKey: string;
  signingSecret: string;
  owner: Credentials;
}

/** A signed-in member, as every dashboard request sees it: the role is read afresh, so a change applies at once. */
export interface Session {
  workspace: Workspace;
  email: string;
  role: Role;
  csrfToken: string;
}

export interface SecretsView {
  current: SigningSecret;
  /** The previous secret while it still signs (a rotation overlap), else null. */
  previous: SigningSecret | null;
}

export interface AccountsDeps {
  workspaces: WorkspaceRepository;
  sessions: SessionRepository;
  failures: FailureCounter;
  /** SECRET_ROTATION_OVERLAP_SECONDS. */
  rotationOverlapSeconds: number;
  /** Where each change to members, API keys and signing secrets is recorded, with who made it. */
  audit: AuditLog;
  /**
   * How long an authenticated API key is trusted without a new lookup, in ms; 0 (the default)
   * looks every key up every time. The gateway passes {@link API_KEY_CACHE_MS}.
   */
  apiKeyCacheMs?: number;
  /**
   * The scrypt parameters new password hashes (and the decoy an unknown e-mail is checked against)
   * are made with; {@link SCRYPT_PARAMS} unless given. Tests whose subject is not the cost pass a
   * cheap set; production never sets it.
   */
  scrypt?: ScryptParams;
  now?: () => number;
}

interface CachedApiKey {
  workspaceId: string;
  keyId: string;
  /** When the lookup that produced this entry started, so the entry is never younger than Redis's answer. */
  expiresMs: number;
  lastUsedMs: number | null;
}

/**
 * Workspace accounts: members and their passwords, dashboard sessions, API keys and signing
 * secrets. The gateway (API-key authentication and the dashboard) and the admin CLI both call it.
 * Credentials are minted here and handed to the storage as hashes; authorisation (who may do
 * what) is the caller's, with {@link can}, because the CLI is an operator with no role.
 */
export class WorkspaceAccounts {
  private readonly now: () => number;
  private readonly apiKeyCacheMs: number;
  private readonly scrypt: ScryptParams;
  /** By the key's SHA-256, never the key itself. */
  private readonly apiKeyCache = new Map<string, CachedApiKey>();
  /** Bumped by every revocation: a lookup that started before one may not fill the cache. */
  private revocations = 0;

  constructor(private readonly deps: AccountsDeps) {
    this.now = deps.now ?? Date.now;
    this.apiKeyCacheMs = deps.apiKeyCacheMs ?? 0;
    this.scrypt = deps.scrypt ?? SCRYPT_PARAMS;
  }

  /** The workspace's audit: who changed its members, API keys and signing secrets (and its endpoints, through @media/callbacks). */
  get audit(): AuditLog {
    return this.deps.audit;
  }

  /** A workspace with its first API key, signing secret and owner; every credential is shown this once. */
  async createWorkspace(name: string, ownerEmail: string): Promise<NewWorkspace> {
    const email = normalizeEmail(ownerEmail);
    const now = this.now();
    const workspace: Workspace = { id: newWorkspaceId(), name, created_ms: now };
    const key = mint.apiKey();
    const signingSecret = mint.signingSecret();
    const password = mint.password();
    await this.deps.workspaces.insert(
      workspace,
      { id: key.id, hash: hashApiKey(key.key), prefix: key.prefix, created_ms: now },
      { secret: signingSecret, created_ms: now, expires_ms: 0 },
      { email, role: 'owner', password_hash: await this.passwordHash(email, password), session_epoch: mint.sessionEpoch() },
    );
    await this.deps.audit.record(workspace.id, 'workspace.created', OPERATOR, { type: 'workspace', id: workspace.id, name, owner: email, api_key: key.id });
    return { workspace, apiKey: key.key, signingSecret, owner: { email, password, role: 'owner' } };
  }

  async workspace(workspaceId: string): Promise<Workspace> {
    const workspace = await this.deps.workspaces.get(workspaceId);
    if (!workspace) throw new WorkspaceNotFoundError(workspaceId);
    return workspace;
  }

  // --- members -------------------------------------------------------------------------------

  async members(workspaceId: string): Promise<{ email: string; role: Role }[]> {
    return (await this.deps.workspaces.members(workspaceId)).map(({ email, role }) => ({ email, role }));
  }

  /** Adds a member with a generated password, returned this once. */
  async addMember(workspaceId: string, email: string, role: Role, actor: AuditActor = OPERATOR): Promise<Credentials> {
    const normalized = normalizeEmail(email);
    if (!isRole(role)) throw new InvalidAccountInputError('role must be owner, admin or member', 'role');
    await this.workspace(workspaceId);
    const password = mint.password();
    const added = await this.deps.workspaces.addMember(workspaceId, {
      email: normalized,
      role,
      password_hash: await this.passwordHash(normalized, password),
      // A member added again (the way to give someone a new password) gets a new epoch: sessions of before are void.
      session_epoch: mint.sessionEpoch(),
    });
    if (!added) throw new MemberExistsError(normalized);
    await this.deps.audit.record(workspaceId, 'member.added', actor, { type: 'member', id: normalized, role });
    return { email: normalized, password, role };
  }

  /**
   * Changes a member's role and ends their sessions: a session carries what its member could do
   * when it was opened, so they sign in again under the new role.
   *
   * @throws LastOwnerError when this would leave no owner
   */
  async setRole(workspaceId: string, email: string, role: Role, actor: AuditActor = OPERATOR): Promise<{ email: string; role: Role }> {
    if (!isRole(role)) throw new InvalidAccountInputError('role must be owner, admin or member', 'role');
    const normalized = email.trim().toLowerCase();
    this.check(await this.deps.workspaces.changeMember(workspaceId, normalized, { role, sessionEpoch: mint.sessionEpoch() }), normalized);
    await this.deps.audit.record(workspaceId, 'member.role_changed', actor, { type: 'member', id: normalized, role });
    return { email: normalized, role };
  }

  /** Removes the member and ends their sessions, for good: added again, they get a new epoch. */
  async removeMember(workspaceId: string, email: string, actor: AuditActor = OPERATOR): Promise<void> {
    const normalized = email.trim().toLowerCase();
    this.check(await this.deps.workspaces.changeMember(workspaceId, normalized, null), normalized);
    await this.deps.audit.record(workspaceId, 'member.removed', actor, { type: 'member', id: normalized });
  }

  /**
   * Each membership has its own password (the one its workspace's admin handed out; adding the member
   * again replaces that workspace's only), hashed with the salt of the e-mail's first membership, so
   * that sign-in checks all of them with one scrypt.
   */
  private async passwordHash(email: string, password: string): Promise<string> {
    return hashPassword(password, (await this.memberships(email))[0]?.member.password_hash, this.scrypt);
  }

  /** The e-mail's memberships, by workspace id: the first one's salt is the one sign-in derives with. */
  private async memberships(email: string): Promise<{ workspaceId: string; member: StoredMember }[]> {
    const ids = await this.deps.workspaces.workspacesOfMember(email);
    const members = await Promise.all(ids.map((id) => this.deps.workspaces.member(id, email)));
    return ids.flatMap((workspaceId, i) => (members[i] ? [{ workspaceId, member: members[i] }] : []));
  }

  private check(outcome: 'ok' | 'missing' | 'last_owner', email: string): void {
    if (outcome === 'missing') throw new MemberNotFoundError(email);
    if (outcome === 'last_owner') throw new LastOwnerError(email);
  }

  // --- sign-in and sessions -----------------------------------------------------------------

  /**
   * Checks e-mail and password and opens a session. Failures are counted per client address and per
   * e-mail from that address ({@link SIGN_IN_LIMITS}): past a limit an attempt is refused (the right
   * password included) with how long to wait, so a guesser learns nothing more; from another address
   * the owner still signs in. Every attempt costs exactly one scrypt, whether the e-mail is unknown
   * or a member of one workspace or of many, so that timing tells neither which e-mails exist nor
   * how many workspaces they belong to, and no e-mail makes a guess cost the server more CPU than another.
   *
   * @returns the cookie token (shown to the browser only) and the session
   */
  async signIn(email: string, password: string, clientAddress: string): Promise<{ token: string; session: Session }> {
    const normalized = email.trim().toLowerCase();
    const [emailHash, addressHash] = [sha256(normalized), sha256(clientAddress)];
    const { allowed, retryAfterMs } = await this.deps.failures.reserve(emailHash, addressHash, this.now());
    if (!allowed) throw new SignInThrottledError(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    // An e-mail may belong to several workspaces, each with its own password: the first that matches wins.
    const candidates = await this.memberships(normalized);
    const matches = await verifyPasswords(
      password,
      candidates.map(({ member }) => member.password_hash),
      this.scrypt,
    );
    const match = candidates.find((_, i) => matches[i]);
    const found = match && { workspaceId: match.workspaceId, role: match.member.role, epoch: match.member.session_epoch ?? '' };
    // A failure keeps its place in the counts; a success gives it back.
    if (!found) throw new InvalidCredentialsError();
    await this.deps.failures.release(emailHash, addressHash);
    const token = mint.sessionToken();
    const stored: StoredSession = {
      workspace_id: found.workspaceId,
      email: normalized,
      csrf_token: mint.csrfToken(),
      created_ms: this.now(),
      member_epoch: found.epoch,
    };
    await this.deps.sessions.create(sha256(token), stored, SESSION_IDLE_SECONDS);
    return { token, session: { workspace: await this.workspace(found.workspaceId), email: normalized, role: found.role, csrfToken: stored.csrf_token } };
  }

  /**
   * The session of a cookie token, checked against the member as they are now: undefined (and the
   * session ended) when it is past its maximum age, or its member was removed, re-added or given
   * another role since it was opened. Only a session that passes has its idle timer restarted, so a
   * refused cookie, however often it is sent, keeps nothing alive.
   */
  async resume(token: string): Promise<Session | undefined> {
    if (!token) return undefined;
    const tokenHash = sha256(token);
    const stored = await this.deps.sessions.get(tokenHash);
    if (!stored) return undefined;
    const [member, workspace] = await Promise.all([
      this.deps.workspaces.member(stored.workspace_id, stored.email),
      this.deps.workspaces.get(stored.workspace_id),
    ]);
    const expired = this.now() - stored.created_ms > SESSION_MAX_SECONDS * 1000;
    if (expired || !member || !workspace || (member.session_epoch ?? '') !== stored.member_epoch) {
      await this.deps.sessions.delete(tokenHash);
      return undefined;
    }
    await this.deps.sessions.refresh(tokenHash, SESSION_IDLE_SECONDS);
    return { workspace, email: member.email, role: member.role, csrfToken: stored.csrf_token };
  }

  async signOut(token: string): Promise<void> {
    if (token) await this.deps.sessions.delete(sha256(token));
  }

  // --- API keys -----------------------------------------------------------------------------

  /** The workspace an API key belongs to (see {@link identifyApiKey}). */
  async authenticateApiKey(apiKey: string): Promise<string | undefined> {
    return (await this.identifyApiKey(apiKey))?.workspaceId;
  }

  /**
   * The workspace an API key belongs to and the key's id (what the audit names a change made with
   * it by), recording its use at most once per {@link API_KEY_TOUCH_INTERVAL_MS}: the read is needed
   * anyway, the write is rare. With `apiKeyCacheMs`, a key found is trusted that long without
   * another read (an unknown key is never remembered, so a new key works at once).
   */
  async identifyApiKey(apiKey: string): Promise<{ workspaceId: string; keyId: string } | undefined> {
    const started = this.now();
    if (this.apiKeyCacheMs <= 0) {
      const owner = await this.deps.workspaces.lookupApiKey(apiKey);
      if (!owner) return undefined;
      if (owner.last_used_ms === null || started - owner.last_used_ms >= API_KEY_TOUCH_INTERVAL_MS) await this.deps.workspaces.touchApiKey(apiKey, started);
      return { workspaceId: owner.workspace_id, keyId: owner.key_id };
    }
    const hash = hashApiKey(apiKey);
    let entry = this.apiKeyCache.get(hash);
    if (entry && entry.expiresMs <= started) {
      this.apiKeyCache.delete(hash);
      entry = undefined;
    }
    if (!entry) {
      const generation = this.revocations;
      const owner = await this.deps.workspaces.lookupApiKey(apiKey);
      if (!owner) return undefined;
      entry = { workspaceId: owner.workspace_id, keyId: owner.key_id, expiresMs: started + this.apiKeyCacheMs, lastUsedMs: owner.last_used_ms };
      // A revocation while Redis answered may have been of this key: answer this call, remember nothing.
      if (generation === this.revocations) this.remember(hash, entry);
    }
    if (entry.lastUsedMs === null || started - entry.lastUsedMs >= API_KEY_TOUCH_INTERVAL_MS) {
      entry.lastUsedMs = started;
      await this.deps.workspaces.touchApiKey(apiKey, started);
    }
    return { workspaceId: entry.workspaceId, keyId: entry.keyId };
  }

  private remember(hash: string, entry: CachedApiKey): void {
    this.apiKeyCache.delete(hash);
    if (this.apiKeyCache.size >= API_KEY_CACHE_ENTRIES) this.apiKeyCache.delete(this.apiKeyCache.keys().next().value!);
    this.apiKeyCache.set(hash, entry);
  }

  apiKeys(workspaceId: string): Promise<ApiKeyInfo[]> {
    return this.deps.workspaces.apiKeys(workspaceId);
  }

  /** A new key; the key itself is returned this once and only its hash is kept. */
  async createApiKey(workspaceId: string, actor: AuditActor = OPERATOR): Promise<ApiKeyInfo & { key: string }> {
    await this.workspace(workspaceId);
    const minted = mint.apiKey();
    const stored = { id: minted.id, hash: hashApiKey(minted.key), prefix: minted.prefix, created_ms: this.now() };
    await this.deps.workspaces.addApiKey(workspaceId, stored);
    await this.deps.audit.record(workspaceId, 'api_key.created', actor, { type: 'api_key', id: stored.id, prefix: stored.prefix });
    return { ...stored, last_used_ms: null, key: minted.key };
  }

  /**
   * The key stops working at once in this process, and within {@link API_KEY_CACHE_MS} in every
   * other gateway (each forgets what it looked up after that long).
   *
   * @throws ApiKeyNotFoundError for an id that is not this workspace's
   */
  async revokeApiKey(workspaceId: string, keyId: string, actor: AuditActor = OPERATOR): Promise<void> {
    this.forgetApiKey(workspaceId, keyId);
    try {
      if (!(await this.deps.workspaces.revokeApiKey(workspaceId, keyId))) throw new ApiKeyNotFoundError(keyId);
    } finally {
      // Again once deleted: a lookup that raced the deletion must not keep the key alive here.
      this.forgetApiKey(workspaceId, keyId);
    }
    await this.deps.audit.record(workspaceId, 'api_key.revoked', actor, { type: 'api_key', id: keyId });
  }

  private forgetApiKey(workspaceId: string, keyId: string): void {
    this.revocations++;
    for (const [hash, entry] of this.apiKeyCache) {
      if (entry.keyId === keyId && entry.workspaceId === workspaceId) this.apiKeyCache.delete(hash);
    }
  }

  // --- signing secrets ----------------------------------------------------------------------

  async secrets(workspaceId: string): Promise<SecretsView> {
    const list = await this.deps.workspaces.signingSecrets(workspaceId, this.now());
    const current = list.find((s) => s.expires_ms === 0);
    if (!current) throw new WorkspaceNotFoundError(workspaceId);
    return { current, previous: list.find((s) => s.expires_ms !== 0) ?? null };
  }

  /** A new current secret at once; the previous one keeps signing for the configured overlap. */
  async rotateSecret(workspaceId: string, actor: AuditActor = OPERATOR): Promise<SecretsView> {
    await this.workspace(workspaceId);
    await this.deps.workspaces.rotateSecret(workspaceId, mint.signingSecret(), this.deps.rotationOverlapSeconds, this.now());
    await this.deps.audit.record(workspaceId, 'signing_secret.rotated', actor, {
      type: 'signing_secret',
      id: workspaceId,
      overlap_seconds: this.deps.rotationOverlapSeconds,
    });
    return this.secrets(workspaceId);
  }

  /** The previous secret stops signing now (a leaked secret should not keep signing for a day). */
  async endOverlap(workspaceId: string, actor: AuditActor = OPERATOR): Promise<SecretsView> {
    await this.workspace(workspaceId);
    await this.deps.workspaces.endSecretOverlap(workspaceId);
    await this.deps.audit.record(workspaceId, 'signing_secret.overlap_ended', actor, { type: 'signing_secret', id: workspaceId });
    return this.secrets(workspaceId);
  }

  // --- asymmetric (v1a) signing keys ----------------------------------------------------------

  /** The workspace's `whpk_…` keys that verify deliveries now, current first; empty while asymmetric signing is off. */
  publicSigningKeys(workspaceId: string): Promise<PublicSigningKey[]> {
    return this.deps.workspaces.publicSigningKeys(workspaceId, this.now());
  }

  /**
   * Deliveries carry a `v1a` (ed25519) entry beside `v1` from now on. Idempotent: when the
   * workspace has a key pair already it is kept (a receiver may hold its public key).
   */
  async enableAsymmetricSigning(workspaceId: string, actor: AuditActor = OPERATOR): Promise<AsymmetricSigning> {
    await this.workspace(workspaceId);
    const pair = mint.signingKeyPair();
    const enabled = await this.deps.workspaces.addFirstSigningKey(workspaceId, {
      secret_key: pair.secretKey,
      public_key: pair.publicKey,
      created_ms: this.now(),
      expires_ms: 0,
    });
    if (enabled) await this.deps.audit.record(workspaceId, 'signing_key.enabled', actor, { type: 'signing_key', id: workspaceId });
    return { enabled_now: enabled, keys: await this.publicSigningKeys(workspaceId) };
  }

  /**
   * A new current key pair at once; the previous one keeps signing (a second `v1a` entry) for the
   * same overlap as a rotated secret, so receivers have time to fetch the new public key.
   *
   * @throws AsymmetricSigningOffError when the workspace has no key pair to rotate
   */
  async rotateSigningKey(workspaceId: string, actor: AuditActor = OPERATOR): Promise<PublicSigningKey[]> {
    await this.workspace(workspaceId);
    if ((await this.publicSigningKeys(workspaceId)).length === 0) throw new AsymmetricSigningOffError(workspaceId);
    const pair = mint.signingKeyPair();
    const now = this.now();
    await this.deps.workspaces.rotateSigningKey(
      workspaceId,
      { secret_key: pair.secretKey, public_key: pair.publicKey, created_ms: now, expires_ms: 0 },
      this.deps.rotationOverlapSeconds,
      now,
    );
    await this.deps.audit.record(workspaceId, 'signing_key.rotated', actor, {
      type: 'signing_key',
      id: workspaceId,
      overlap_seconds: this.deps.rotationOverlapSeconds,
    });
    return this.publicSigningKeys(workspaceId);
  }
}

/** What turning asymmetric signing on did. */
export interface AsymmetricSigning {
  /** False when it was on already: the existing key pair is kept. */
  enabled_now: boolean;
  /** The public keys that verify deliveries now, current first. */
  keys: PublicSigningKey[];
}

/** Constant-time comparison of two tokens (CSRF); different lengths are simply unequal. */
export function tokensEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function normalizeEmail(email: string): string {
  const normalized = String(email ?? '')
    .trim()
    .toLowerCase();
  if (!EMAIL.test(normalized)) throw new InvalidAccountInputError('email must be an e-mail address', 'email');
  return normalized;
}
