import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt, memory-hard: N = 2^15, r = 8, p = 1 takes 32 MiB and tens of milliseconds per hash, which
 * is OWASP's recommended floor. The parameters are written into every hash, so raising them later
 * leaves existing passwords verifiable.
 */
export const SCRYPT_PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 1, keylen: 32 };

/**
 * The work factors and key length new hashes are made with. Production uses {@link SCRYPT_PARAMS};
 * another set is for tests whose subject is not the cost itself (a cheap N makes a hash take about
 * a millisecond instead of tens, with the same code path).
 */
export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
  readonly keylen: number;
}
// Node's default maxmem (32 MiB) is exactly what N=2^15, r=8 needs; the headroom avoids a refusal.
const MAXMEM = 64 * 1024 * 1024;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** A stored hash taken apart: what scrypt needs to derive a key, and the key to compare with. */
interface ScryptHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** Reads `scrypt$N$r$p$salt$hash` and the older `scrypt$salt$hash` (Node's defaults: N = 16384, r = 8, p = 1). */
function parseHash(stored: string): ScryptHash | undefined {
  const parts = stored.split('$');
  const [N, r, p, salt, key] =
    parts.length === 3 ? [16384, 8, 1, parts[1], parts[2]] : [Number(parts[1]), Number(parts[2]), Number(parts[3]), parts[4], parts[5]];
  if (parts[0] !== 'scrypt' || !salt || !key || ![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return undefined;
  return { N, r, p, salt: Buffer.from(salt, 'base64'), key: Buffer.from(key, 'base64') };
}

/** Whether one derived key checks both hashes: same salt, parameters and key length. */
function derivedAlike(a: ScryptHash, b: ScryptHash): boolean {
  return a.N === b.N && a.r === b.r && a.p === b.p && a.key.length === b.key.length && a.salt.equals(b.salt);
}

/**
 * `scrypt$N$r$p$salt$hash`, salt and hash in base64. Given `like` (another hash of the same
 * e-mail), its salt and parameters are reused, so that one scrypt checks a password against every
 * membership of that e-mail (see {@link verifyPasswords}); otherwise a new salt and the current
 * parameters (`params`, {@link SCRYPT_PARAMS} unless given).
 */
export async function hashPassword(password: string, like?: string, params: ScryptParams = SCRYPT_PARAMS): Promise<string> {
  const base = like === undefined ? undefined : parseHash(like);
  const { N, r, p } = base ?? params;
  const salt = base?.salt ?? randomBytes(16);
  const hash = await scrypt(password, salt, base?.key.length ?? params.keylen, { N, r, p, maxmem: MAXMEM });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * Checks a password against a stored hash in constant time. Also reads the older
 * `scrypt$salt$hash` form, which used Node's defaults (N = 16384, r = 8, p = 1).
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  return parseHash(stored) !== undefined && (await verifyPasswords(password, [stored]))[0];
}

/**
 * Checks a password against several hashes (an e-mail's memberships) for the cost of exactly one
 * scrypt, whatever their number, so that neither the time nor the CPU of a sign-in depends on how
 * many workspaces the e-mail belongs to. The key is derived with the first hash's salt and
 * parameters (with the decoy's when there is no usable first hash) and compared in constant time
 * with every hash made with the same ones; a hash with another salt (stored before memberships
 * shared one) cannot match. The decoy is made with `params`, the parameters new hashes get, so
 * that a miss costs what a hit does.
 *
 * @returns for each hash, whether the password matches it
 */
export async function verifyPasswords(password: string, stored: readonly string[], params: ScryptParams = SCRYPT_PARAMS): Promise<boolean[]> {
  const hashes = stored.map(parseHash);
  const reference = hashes[0] ?? parseHash(await decoyHash(params))!;
  const { N, r, p, salt, key } = reference;
  const derived = await scrypt(password, salt, key.length, { N, r, p, maxmem: MAXMEM });
  return hashes.map((hash) => hash !== undefined && derivedAlike(hash, reference) && timingSafeEqual(hash.key, derived));
}

/**
 * A hash to compare against when the e-mail is unknown, so that a miss costs as long as a wrong
 * password: one per parameter set, made on first use.
 */
const decoys = new Map<string, Promise<string>>();
export function decoyHash(params: ScryptParams = SCRYPT_PARAMS): Promise<string> {
  const key = `${params.N}$${params.r}$${params.p}$${params.keylen}`;
  let decoy = decoys.get(key);
  if (!decoy) {
    decoy = hashPassword(randomBytes(16).toString('hex'), undefined, params);
    decoys.set(key, decoy);
  }
  return decoy;
}
