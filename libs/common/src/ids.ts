import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

function encode(bytes: Buffer, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length];
  return out;
}

/** Random identifier with a type prefix, e.g. `video_3kq…`. */
export function newId(prefix: string, length = 24): string {
  return `${prefix}_${encode(randomBytes(length), length)}`;
}

/** Identifier derived from its inputs, so that replaying the same work yields the same id. */
export function derivedId(prefix: string, ...parts: string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return `${prefix}_${encode(digest, 24)}`;
}
