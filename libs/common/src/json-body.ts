import express, { type RequestHandler } from 'express';
import { ApiError } from './api-error';

/**
 * How deep a request's JSON may nest, and how many values it may hold: far more than any request of
 * the API needs (an edit is three levels deep and a few dozen values), and few enough that parsing
 * is linear and quick. `JSON.parse` of a deeply nested body is not: 31 MB of `[[[…` held the
 * gateway's event loop, and so every other client's request, for seconds.
 */
export const JSON_MAX_DEPTH = 32;
export const JSON_MAX_VALUES = 10_000;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Refuses a JSON text nested deeper than `maxDepth` or holding more than `maxValues` values, in one
 * pass over its bytes (strings skipped, so a base64 image costs a byte compare per byte), before
 * anything parses it. Whether the text is valid JSON is the parser's to say afterwards.
 */
export function checkJsonShape(bytes: Uint8Array, maxDepth = JSON_MAX_DEPTH, maxValues = JSON_MAX_VALUES): void {
  let depth = 0;
  // One more than the commas and containers seen: an upper bound of the values (keys excluded).
  let values = 1;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      // To the closing quote: nothing inside a string nests or separates.
      for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === BACKSLASH) i++;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > maxDepth) throw tooComplex(`nests deeper than ${maxDepth} levels`);
      if (++values > maxValues) throw tooComplex(`holds more than ${maxValues} values`);
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    } else if (byte === COMMA && ++values > maxValues) {
      throw tooComplex(`holds more than ${maxValues} values`);
    }
  }
}

const tooComplex = (what: string) => ApiError.invalid(`The JSON body ${what}; no request of this API needs that many.`, null, 'json_too_complex');

/**
 * `express.json` for bodies of up to `limit`, whose shape is checked ({@link checkJsonShape})
 * before they are parsed. Mount it on the routes that read a body, after their authentication and
 * rate limit, never ahead of a router: a request that is refused, or that matches no route, is
 * never parsed.
 */
export function jsonBody(limit: number | string): RequestHandler {
  return express.json({ limit, verify: (_req, _res, buf) => checkJsonShape(buf) });
}
