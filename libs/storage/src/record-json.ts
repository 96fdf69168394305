/**
 * Every record the store writes goes through here. Redis's Lua scripts decode records with cjson,
 * which rejects the `\ud800`-style escapes that JSON.stringify writes for a lone UTF-16 surrogate;
 * one such string in a prompt or URL would make the record impossible to finish, fail or call back.
 * Lone surrogates become U+FFFD, exactly as they would in any UTF-8 encoding of the text.
 */
export function encodeRecord(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' && !v.isWellFormed() ? v.toWellFormed() : v));
}
