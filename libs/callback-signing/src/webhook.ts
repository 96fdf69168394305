/**
 * The callback signing contract (spec sections 4.5 and 5): Standard Webhooks
 * `webhook-id` / `webhook-timestamp` / `webhook-signature` headers carrying an
 * HMAC-SHA256 over `<id>.<timestamp>.<raw body>`.
 *
 * The sender (webhook dispatcher) and every receiver use this one module, so
 * the two sides cannot drift apart.
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import {
  ASYMMETRIC_VERSION,
  AsymmetricKeyError,
  PUBLIC_KEY_PREFIX,
  publicKeyObject,
  secretKeyObject,
  signAsymmetricWith,
  verifyAsymmetric,
} from './asymmetric';

/** Prefix of every signing secret; the key bytes are the base64 after it. */
export const SECRET_PREFIX = 'whsec_';

/** Spec section 8: a delivery may differ from the receiver's clock by this much. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The only signature version defined (spec section 9.2). */
export const SIGNATURE_VERSION = 'v1';

/** `user-agent` of every callback (spec 4.5); the docs URL tells a receiver's operator who is calling. */
export const userAgent = (docsUrl: string): string => `Service-Webhooks/1.0 (+${docsUrl.replace(/\/+$/, '')}/webhooks)`;

/**
 * Strict standard-alphabet base64. Node's decoder silently drops characters it
 * does not understand, so without this a mistyped secret would turn into a
 * different key and every signature would mysteriously fail.
 */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Canonical decimal only. Other libraries sign either the header text or the
 * number parsed from it; for `"01614265330"` those differ, so accepting such a
 * header would make the result depend on which library the sender used.
 */
const UNIX_SECONDS = /^(0|[1-9][0-9]*)$/;

/** Why a delivery was rejected; stable strings meant for logs and error responses. */
export type WebhookVerificationErrorCode =
  'missing_headers' | 'bad_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'no_matching_signature' | 'bad_secret';

/**
 * Thrown when a delivery fails verification, or when a secret is malformed
 * (`bad_secret`, which is a configuration error rather than a bad request).
 */
export class WebhookVerificationError extends Error {
  /** Machine-readable reason; the message is for humans. */
  readonly code: WebhookVerificationErrorCode;

  constructor(code: WebhookVerificationErrorCode, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

/** Options for {@link verify}. */
export interface VerifyOptions {
  /** Maximum allowed |now - webhook-timestamp| in seconds. Default 300 (spec section 8). */
  toleranceSeconds?: number;
  /** Current time in Unix seconds. Injectable so tests can replay fixed vectors. */
  now?: () => number;
}

/**
 * Request headers as Node (`IncomingHttpHeaders`), Express or a plain object
 * gives them (any key case), or a fetch `Headers` instance.
 */
export type HeadersLike = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Generates a new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/**
 * Computes the bare base64 signature (without the `v1,` tag) of one delivery.
 *
 * @param secret - `whsec_...` signing secret.
 * @param msgId - value of the `webhook-id` header.
 * @param timestamp - value of the `webhook-timestamp` header, Unix seconds.
 * @param body - the exact bytes sent; a string is encoded as UTF-8.
 * @throws {@link WebhookVerificationError} `bad_secret` if the secret is malformed.
 */
export function sign(secret: string, msgId: string, timestamp: number, body: string | Buffer): string {
  return hmac(decodeSecret(secret), msgId, timestamp, body);
}

/**
 * Builds the `webhook-signature` header value: space-separated `v1,<sig>`
 * entries, one per secret, then a `v1a,<sig>` entry per ed25519 secret key
 * (`whsk_…`) when the workspace signs asymmetrically too. During a rotation
 * overlap (spec 5.5) pass the new and the old secret (and key) so receivers
 * holding either one accept the delivery.
 *
 * @throws {@link WebhookVerificationError} `bad_secret` if the list is empty or any secret or key is malformed.
 */
export function signatureHeader(secrets: string[], msgId: string, timestamp: number, body: string | Buffer, secretKeys: readonly string[] = []): string {
  if (secrets.length === 0) throw noSecret();
  return signatureHeaderWith(signingKeys(secrets, secretKeys), msgId, timestamp, body);
}

/**
 * Secrets and ed25519 secret keys decoded for signing. A sender that signs many deliveries with the
 * same ones decodes them once ({@link signingKeys}) and signs with {@link signatureHeaderWith}:
 * decoding costs more than the HMAC itself.
 */
export interface SigningKeys {
  /** One per `whsec_…` secret, current first: a `v1` entry each. */
  readonly secrets: readonly KeyObject[];
  /** One per `whsk_…` secret key, current first: a `v1a` entry each. */
  readonly secretKeys: readonly KeyObject[];
}

/**
 * Decodes secrets (`whsec_…`) and ed25519 secret keys (`whsk_…`) for {@link signatureHeaderWith}.
 *
 * @throws {@link WebhookVerificationError} `bad_secret` if any secret or key is malformed.
 */
export function signingKeys(secrets: readonly string[], secretKeys: readonly string[] = []): SigningKeys {
  return {
    secrets: secrets.map(decodeSecret),
    secretKeys: secretKeys.map((key) => {
      try {
        return secretKeyObject(key);
      } catch (err) {
        if (err instanceof AsymmetricKeyError) throw new WebhookVerificationError('bad_secret', err.message);
        throw err;
      }
    }),
  };
}

/**
 * {@link signatureHeader} with secrets and keys decoded already.
 *
 * @throws {@link WebhookVerificationError} `bad_secret` if there is no secret.
 */
export function signatureHeaderWith(keys: SigningKeys, msgId: string, timestamp: number, body: string | Buffer): string {
  if (keys.secrets.length === 0) throw noSecret();
  const symmetric = keys.secrets.map((key) => `${SIGNATURE_VERSION},${hmac(key, msgId, timestamp, body)}`);
  const asymmetric = keys.secretKeys.map((key) => `${ASYMMETRIC_VERSION},${signAsymmetricWith(key, msgId, timestamp, body)}`);
  return [...symmetric, ...asymmetric].join(' ');
}

/**
 * Verifies one delivery per spec 5.4 and returns its parsed JSON payload.
 *
 * - `rawBody` must be the bytes as received: re-serialised JSON changes the signature.
 * - Rejects when |now - webhook-timestamp| exceeds the tolerance (300 s by default).
 * - Accepts if any `v1` entry of `webhook-signature` equals the expected
 *   signature for any of the given secrets (constant-time comparison), or any
 *   `v1a` entry verifies under any given `whpk_…` public key; other versions
 *   are ignored.
 *
 * @param headers - plain object with any key case (string, string[] or undefined values) or a `Headers` instance.
 * @param secret - one secret or several, e.g. old and new while rotating on the receiver side.
 * @throws {@link WebhookVerificationError} with a `code` saying why.
 * @throws SyntaxError if the signature is valid but the body is not JSON.
 */
export function verify(rawBody: string | Buffer, headers: HeadersLike, secret: string | string[], options: VerifyOptions = {}): unknown {
  const { body } = verifyDelivery(rawBody, headers, secret, options);
  return JSON.parse(body.toString('utf8'));
}

/** Result of {@link verifyDelivery}. */
export interface VerifiedDelivery {
  msgId: string;
  timestamp: number;
  body: Buffer;
}

/**
 * {@link verify} without the JSON parsing, also returning the delivery id.
 * Not re-exported from the package entry; the middleware uses it so it can
 * tell a bad signature from a correctly signed non-JSON body.
 *
 * @internal
 */
export function verifyDelivery(rawBody: string | Buffer, headers: HeadersLike, secret: string | string[], options: VerifyOptions = {}): VerifiedDelivery {
  // The usual integration bug is passing an already parsed JSON object; name it
  // instead of failing later with a confusing signature mismatch.
  if (typeof rawBody !== 'string' && !Buffer.isBuffer(rawBody)) {
    throw new TypeError(
      `verify() needs the raw request body as a string or Buffer, got ${rawBody === null ? 'null' : typeof rawBody}; ` +
        'read it with express.raw() (or verifyWebhook()) before any JSON body parser',
    );
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;

  // Secrets first: a misconfigured receiver should fail the same way whatever it is sent. `whpk_…`
  // public keys check `v1a` entries; `whsec_…` secrets check `v1` entries.
  const supplied = Array.isArray(secret) ? secret : [secret];
  const publicKeys = supplied.filter((s) => typeof s === 'string' && s.startsWith(PUBLIC_KEY_PREFIX));
  for (const key of publicKeys) {
    try {
      publicKeyObject(key);
    } catch (err) {
      throw new WebhookVerificationError('bad_secret', (err as Error).message);
    }
  }
  const symmetric = supplied.filter((s) => !publicKeys.includes(s));
  const keys = symmetric.length === 0 && publicKeys.length > 0 ? [] : decodeSecrets(symmetric);

  const msgId = readHeader(headers, 'webhook-id');
  const timestampText = readHeader(headers, 'webhook-timestamp');
  const signatures = readHeader(headers, 'webhook-signature');
  if (msgId === undefined || timestampText === undefined || signatures === undefined) {
    throw new WebhookVerificationError('missing_headers', 'Missing webhook-id, webhook-timestamp or webhook-signature header');
  }

  const timestamp = parseTimestamp(timestampText);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!(tolerance >= 0)) {
    throw new RangeError(`toleranceSeconds must be a non-negative number, got ${tolerance}`);
  }
  const now = (options.now ?? unixNow)();
  // Both directions matter: an old timestamp is a replay, a future one would
  // stay "fresh" long enough to be replayed later.
  if (now - timestamp > tolerance) {
    throw new WebhookVerificationError('timestamp_too_old', 'Webhook timestamp is too old');
  }
  if (timestamp - now > tolerance) {
    throw new WebhookVerificationError('timestamp_too_new', 'Webhook timestamp is too new');
  }

  const expected = keys.map((key) => Buffer.from(hmac(key, msgId, timestamp, body), 'utf8'));
  for (const entry of signatures.split(/\s+/)) {
    const comma = entry.indexOf(',');
    const version = comma < 0 ? '' : entry.slice(0, comma);
    if (version === ASYMMETRIC_VERSION && publicKeys.some((key) => verifyAsymmetric(key, entry.slice(comma + 1), msgId, timestamp, body))) {
      return { msgId, timestamp, body };
    }
    if (version !== SIGNATURE_VERSION) continue;
    const given = Buffer.from(entry.slice(comma + 1), 'utf8');
    // timingSafeEqual throws on unequal lengths; the length of a valid signature
    // is public anyway, so checking it first leaks nothing.
    if (expected.some((candidate) => candidate.length === given.length && timingSafeEqual(candidate, given))) {
      return { msgId, timestamp, body };
    }
  }
  // Deliberately vague: echoing the expected signature would hand it to an attacker.
  throw new WebhookVerificationError('no_matching_signature', 'No matching webhook signature found');
}

function hmac(key: KeyObject, msgId: string, timestamp: number, body: string | Buffer): string {
  // A fractional or unsafe number would be signed in a form no receiver parses back.
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new RangeError(`timestamp must be whole Unix seconds, got ${timestamp}`);
  }
  // Feed a Buffer body as-is: decoding it to a string first would replace
  // invalid UTF-8 sequences and sign different bytes from the ones sent.
  return createHmac('sha256', key).update(`${msgId}.${timestamp}.`, 'utf8').update(body).digest('base64');
}

function decodeSecrets(secrets: readonly string[]): KeyObject[] {
  if (secrets.length === 0) throw noSecret();
  return secrets.map(decodeSecret);
}

function noSecret(): WebhookVerificationError {
  return new WebhookVerificationError('bad_secret', 'At least one webhook secret is required');
}

/**
 * The secret's key as a KeyObject: Node's createHmac takes one several times faster than the same
 * bytes in a Buffer (about 4 µs against 20-30 µs per signature on Node 24), and a dispatcher signs
 * every attempt with every active secret.
 */
function decodeSecret(secret: string): KeyObject {
  // Requiring the prefix catches a pasted API key or a truncated value at
  // start-up rather than as a stream of rejected deliveries.
  if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX)) {
    throw new WebhookVerificationError('bad_secret', `Webhook secret must start with "${SECRET_PREFIX}"`);
  }
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) {
    throw new WebhookVerificationError('bad_secret', `Webhook secret must be "${SECRET_PREFIX}" followed by base64`);
  }
  return createSecretKey(Buffer.from(encoded, 'base64'));
}

function parseTimestamp(text: string): number {
  const value = Number(text);
  if (!UNIX_SECONDS.test(text) || !Number.isSafeInteger(value)) {
    throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp must be Unix seconds');
  }
  return value;
}

/** Returns the header's value, or undefined when absent, empty or ambiguous. */
function readHeader(headers: HeadersLike, name: string): string | undefined {
  let value: string | readonly string[] | null | undefined;
  if (isFetchHeaders(headers)) {
    value = headers.get(name);
  } else {
    value = headers[name];
    if (value === undefined) {
      const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
      value = key === undefined ? undefined : headers[key];
    }
  }
  if (Array.isArray(value)) {
    // Repeated signature headers are just more entries; a repeated id or
    // timestamp has no single meaning, so treat it as absent.
    if (name === 'webhook-signature') value = value.join(' ');
    else value = value.length === 1 ? value[0] : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function isFetchHeaders(headers: HeadersLike): headers is Headers {
  // Duck-typed because Jest and other sandboxes give each context its own
  // `Headers` class, which defeats instanceof.
  return typeof (headers as { get?: unknown }).get === 'function';
}

function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
