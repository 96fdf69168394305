import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/** How far ahead of this replica's clock another replica's may run when it mints a link. */
export const CLOCK_SKEW_SECONDS = 300;

export interface SignedLink {
  url: string;
  /** Unix seconds. */
  expires_at: number;
}

/**
 * Download links are capabilities: `/v1/files/<key>?expires=…&signature=…`, HMAC-signed so any
 * gateway replica can check them without a lookup, and minted fresh whenever an object is rendered.
 */
export class LinkSigner {
  /** The secret made a key once: createHmac checks a KeyObject faster than it takes raw key material. */
  private readonly key: KeyObject;

  constructor(
    secret: string,
    private readonly baseUrl: string,
    private readonly ttlSeconds: number,
  ) {
    this.key = createSecretKey(secret, 'utf8');
  }

  /** A link valid for the TTL, but never past `notAfterSeconds` (when the blob is removed). */
  mint(key: string, nowSeconds = Math.floor(Date.now() / 1000), notAfterSeconds = Infinity): SignedLink {
    const expires = Math.min(nowSeconds + this.ttlSeconds, notAfterSeconds);
    const signature = this.signature(key, expires);
    const path = key.split('/').map(encodeURIComponent).join('/');
    return { url: `${this.baseUrl}/v1/files/${path}?expires=${expires}&signature=${signature}`, expires_at: expires };
  }

  /**
   * 'ok', or why the link is refused. A link that would last longer than this deployment ever mints
   * one for (LINK_TTL_SECONDS from now, plus {@link CLOCK_SKEW_SECONDS} for replicas whose clocks
   * differ) is invalid whatever its signature: only someone holding the signing key could have made
   * it, and such a link must not outlive the key's replacement.
   */
  check(key: string, expires: string, signature: string, nowSeconds = Math.floor(Date.now() / 1000)): 'ok' | 'expired' | 'invalid' {
    if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return 'invalid';
    if (Number(expires) > nowSeconds + this.ttlSeconds + CLOCK_SKEW_SECONDS) return 'invalid';
    const expected = Buffer.from(this.signature(key, Number(expires)));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    return Number(expires) < nowSeconds ? 'expired' : 'ok';
  }

  private signature(key: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${key}\n${expires}`).digest('base64url');
  }
}
