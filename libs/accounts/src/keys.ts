import type { StoreKeys } from '@media/storage';

/**
 * The Redis keys of workspaces, their members, API keys, signing secrets and dashboard sessions
 * (see StoreKeys for the keyspace). They are read far less often than a workspace's traffic and live
 * on the `{store}` shard. Only this package reads or writes them (the dependency rules refuse an
 * import of this file from elsewhere).
 */
export class AccountKeys {
  readonly #store: StoreKeys;

  constructor(store: StoreKeys) {
    this.#store = store;
  }

  workspace = (id: string) => `${this.#store.prefix}:ws:${id}`;
  workspaceSecrets = (id: string) => `${this.#store.prefix}:ws:${id}:secrets`;
  /** The workspace's ed25519 key pairs for `v1a` signatures (JSON list like the secrets'); absent until turned on. */
  workspaceSigningKeys = (id: string) => `${this.#store.prefix}:ws:${id}:signing-keys`;
  workspaceMembers = (id: string) => `${this.#store.prefix}:ws:${id}:members`;
  /** The workspace's API keys: hash of key id → SHA-256 of the key (listing and revoking by id). */
  workspaceApiKeys = (id: string) => `${this.#store.prefix}:ws:${id}:apikeys`;
  /** Workspaces a dashboard e-mail (hashed, lower case) is a member of: sign-in takes no workspace. */
  memberWorkspaces = (emailHash: string) => `${this.#store.prefix}:member:${emailHash}`;
  /** A dashboard session, by the SHA-256 of its cookie token; expires when idle. */
  session = (tokenHash: string) => `${this.#store.prefix}:session:${tokenHash}`;
  /** Failed sign-ins counted per client address, or per e-mail and address together (hashed), in the current window. */
  signInFailures = (scope: 'address' | 'pair', hash: string) => `${this.#store.prefix}:signin:${scope}:${hash}`;
  apiKey = (hash: string) => `${this.#store.prefix}:apikey:${hash}`;
  /** The workspace's audit events by time (Unix ms), newest last; trimmed to AUDIT_RETENTION_SECONDS at each event. */
  workspaceAudit = (id: string) => `${this.#store.prefix}:ws:${id}:audit`;
  /** One audit event (JSON); expires after AUDIT_RETENTION_SECONDS. */
  auditEvent = (id: string) => `${this.#store.prefix}:audit:${id}`;
}
