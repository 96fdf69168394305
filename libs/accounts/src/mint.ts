import { createHash, randomBytes } from 'node:crypto';
import { newId } from '@media/domain';
import { generateKeyPair, generateSecret } from '@media/callback-signing';

/**
 * Minting credentials, kept apart from storing them (the stores only ever see hashes of
 * keys and passwords). Every credential is 256 (keys, sessions) or 96 (passwords) random bits.
 */
export const mint = {
  /** `sk_` + 43 base64url characters; the prefix tells a leaked key apart in secret scanners. */
  apiKey: (): { id: string; key: string; prefix: string } => {
    const key = `sk_${randomBytes(32).toString('base64url')}`;
    return { id: newId('key'), key, prefix: `${key.slice(0, 7)}…` };
  },
  /** Shown once to the member; 16 characters, typed rarely (the browser keeps it). */
  password: (): string => randomBytes(12).toString('base64url'),
  signingSecret: (): string => generateSecret(),
  /** An ed25519 pair for `v1a` signatures: `whsk_…` stays sealed in the store, `whpk_…` is published. */
  signingKeyPair: (): { secretKey: string; publicKey: string } => generateKeyPair(),
  /** The session cookie's value; only its SHA-256 is stored. */
  sessionToken: (): string => randomBytes(32).toString('base64url'),
  csrfToken: (): string => randomBytes(32).toString('base64url'),
  /** A member's session epoch: sessions opened under another one (before a removal, role change or new password) are void. */
  sessionEpoch: (): string => randomBytes(12).toString('base64url'),
};

export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex');
