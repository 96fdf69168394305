import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt, memory-hard: N = 2^15, r = 8, p = 1 takes 32 MiB and tens of milliseconds per hash, which
 * is OWASP's recommended floor. The parameters are written into every hash, so raising them later
 * leaves existing passwords verifiable.
 */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1, keylen: 32 } as const;
// Node's default maxmem (32 MiB) is exactly what N=2^15, r=8 needs; the headroom avoids a refusal.
const MAXMEM = 64 * 1024 * 1024;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64. */
export async function hashPassword(password: string): Promise<string> {
  const { N, r, p, keylen } = SCRYPT_PARAMS;
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, keylen, { N, r, p, maxmem: MAXMEM });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * Checks a password against a stored hash in constant time. Also reads the older
 * `scrypt$salt$hash` form, which used Node's defaults (N = 16384, r = 8, p = 1).
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  const [N, r, p, salt, hash] =
    parts.length === 3 ? [16384, 8, 1, parts[1], parts[2]] : [Number(parts[1]), Number(parts[2]), Number(parts[3]), parts[4], parts[5]];
  if (parts[0] !== 'scrypt' || !salt || !hash || ![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, { N, r, p, maxmem: MAXMEM });
  return timingSafeEqual(expected, actual);
}

/** A hash to compare against when the e-mail is unknown, so that a miss costs as long as a wrong password. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  return decoy;
}
