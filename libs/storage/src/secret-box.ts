import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A sealed value: `enc1:<key id>:<base64 of iv, ciphertext and tag>`. */
const SEALED = /^enc1:([0-9a-f]{8}):([A-Za-z0-9+/]+={0,2})$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretBoxError extends Error {}

/**
 * Secrets that must be used (signing secrets, ed25519 secret keys, the link-signing key) cannot be
 * hashed, so they are kept in Redis sealed: AES-256-GCM under a key-encryption key that lives
 * outside Redis (`SECRETS_ENCRYPTION_KEYS`), bound to what they belong to (the workspace id, as
 * GCM's associated data), so a sealed value copied onto another record does not open.
 *
 * Keys are listed newest first: new values are sealed under the first, and a value opens under
 * whichever key sealed it, so a key can be rotated (add a new one first, re-seal everything with
 * `npm run -s admin -- reencrypt-secrets`, then drop the old one). A value stored before encryption
 * was turned on reads as it is, and is sealed the next time it is written.
 */
export class SecretBox {
  private constructor(private readonly keys: readonly { id: string; key: Buffer }[]) {}

  /** A box sealing under `keys[0]` (each 32 bytes) and opening under any of them; none seals nothing. */
  static of(keys: readonly Buffer[]): SecretBox {
    for (const key of keys) if (key.length !== 32) throw new SecretBoxError('a key-encryption key must be 32 bytes');
    return new SecretBox(keys.map((key) => ({ id: createHash('sha256').update(key).digest('hex').slice(0, 8), key })));
  }

  /** Values written as they are: no key-encryption key is configured. */
  static none(): SecretBox {
    return new SecretBox([]);
  }

  get sealing(): boolean {
    return this.keys.length > 0;
  }

  /** `plain` sealed under the newest key for `owner`; unchanged when no key is configured. */
  seal(plain: string, owner: string): string {
    const newest = this.keys[0];
    if (!newest) return plain;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', newest.key, iv).setAAD(Buffer.from(owner, 'utf8'));
    const sealed = Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `enc1:${newest.id}:${sealed.toString('base64')}`;
  }

  /** The plain value of what {@link seal} stored for `owner` (or of a value stored before sealing). */
  open(stored: string, owner: string): string {
    const match = SEALED.exec(stored);
    if (!match) {
      if (stored.startsWith('enc1:')) throw new SecretBoxError('a sealed secret is malformed');
      return stored;
    }
    const entry = this.keys.find((k) => k.id === match[1]);
    if (!entry) throw new SecretBoxError(`a secret is sealed under key ${match[1]}, which SECRETS_ENCRYPTION_KEYS does not hold`);
    const bytes = Buffer.from(match[2], 'base64');
    const decipher = createDecipheriv('aes-256-gcm', entry.key, bytes.subarray(0, IV_BYTES)).setAAD(Buffer.from(owner, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretBoxError('a sealed secret does not open: altered, or sealed for another owner');
    }
  }

  /** Whether `stored` is sealed under the newest key already (nothing for a re-seal to do). */
  isCurrent(stored: string): boolean {
    const newest = this.keys[0];
    return newest ? SEALED.exec(stored)?.[1] === newest.id : !stored.startsWith('enc1:');
  }
}
