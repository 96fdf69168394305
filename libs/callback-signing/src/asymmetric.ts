/**
 * Standard Webhooks' asymmetric signatures (`v1a`): ed25519 over the same `<id>.<timestamp>.<body>`
 * as `v1`, verified with a public key a receiver can hold without being able to sign. Keys are
 * serialised as the specification says: base64 after `whsk_` (the secret key: the 32-byte ed25519
 * seed of RFC 8032) and `whpk_` (the 32-byte public key); a signature is base64 of its 64 bytes.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';

export const SECRET_KEY_PREFIX = 'whsk_';
export const PUBLIC_KEY_PREFIX = 'whpk_';
export const ASYMMETRIC_VERSION = 'v1a';

/** DER wrappers that turn a raw 32-byte ed25519 key into PKCS#8 (secret) or SPKI (public). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export class AsymmetricKeyError extends Error {}

/** A new ed25519 key pair, serialised: `whsk_…` to keep secret, `whpk_…` to publish. */
export function generateKeyPair(): { secretKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_PREFIX.length);
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return { secretKey: SECRET_KEY_PREFIX + seed.toString('base64'), publicKey: PUBLIC_KEY_PREFIX + raw.toString('base64') };
}

/** The `whpk_…` public key of a `whsk_…` secret key. */
export function publicKeyOf(secretKey: string): string {
  const raw = createPublicKey(secretKeyObject(secretKey)).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return PUBLIC_KEY_PREFIX + raw.toString('base64');
}

/** The bare base64 `v1a` signature (without the `v1a,` tag) of one delivery. */
export function signAsymmetric(secretKey: string, msgId: string, timestamp: number, body: string | Buffer): string {
  return signAsymmetricWith(secretKeyObject(secretKey), msgId, timestamp, body);
}

/** {@link signAsymmetric} with a secret key decoded already ({@link secretKeyObject}). */
export function signAsymmetricWith(secretKey: KeyObject, msgId: string, timestamp: number, body: string | Buffer): string {
  return edSign(null, signedContent(msgId, timestamp, body), secretKey).toString('base64');
}

/** Whether `signature` (base64) is a valid `v1a` signature of the delivery under `publicKey` (`whpk_…`). */
export function verifyAsymmetric(publicKey: string, signature: string, msgId: string, timestamp: number, body: string | Buffer): boolean {
  if (!BASE64.test(signature)) return false;
  const bytes = Buffer.from(signature, 'base64');
  if (bytes.length !== 64) return false;
  return edVerify(null, signedContent(msgId, timestamp, body), publicKeyObject(publicKey), bytes);
}

/** Checks a `whpk_…` key's form; throws {@link AsymmetricKeyError} when it is not one. */
export function publicKeyObject(publicKey: string): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, rawKey(publicKey, PUBLIC_KEY_PREFIX)]), format: 'der', type: 'spki' });
}

/** A `whsk_…` secret key as a KeyObject; throws {@link AsymmetricKeyError} when it is not one. */
export function secretKeyObject(secretKey: string): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, rawKey(secretKey, SECRET_KEY_PREFIX)]), format: 'der', type: 'pkcs8' });
}

function rawKey(serialised: string, prefix: string): Buffer {
  const encoded = typeof serialised === 'string' && serialised.startsWith(prefix) ? serialised.slice(prefix.length) : '';
  const raw = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  if (raw.length !== 32) throw new AsymmetricKeyError(`an ed25519 key must be "${prefix}" followed by base64 of 32 bytes`);
  return raw;
}

function signedContent(msgId: string, timestamp: number, body: string | Buffer): Buffer {
  // The bytes as sent: a Buffer body is signed as-is, never decoded and re-encoded.
  return Buffer.concat([Buffer.from(`${msgId}.${timestamp}.`, 'utf8'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
}
