import { generateSecret, SECRET_PREFIX, sign, signatureHeader, userAgent, verify, WebhookVerificationError } from './index';
import type { HeadersLike, VerifyOptions, WebhookVerificationErrorCode } from './index';

// Official Standard Webhooks test vectors.
const VECTOR_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const VECTOR_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const VECTORS = [
  {
    timestamp: 1614265330,
    payload: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  },
  {
    timestamp: 1696200454,
    payload: '{"type": "example.created", "timestamp":"2023-09-28T19:20:22+00:00", "data":{"str":"string","bool":true,"int":42}}',
    signature: 'v1,GgjvufBlIj71MBIVQotYGb+xEC3LNXCsIZp0HsDC8qs=',
  },
];

const [VECTOR_A, VECTOR_B] = VECTORS;

function headersFor(signature: string, timestamp: number, id = VECTOR_ID): Record<string, string> {
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

function at(timestamp: number): VerifyOptions {
  return { now: () => timestamp };
}

function codeOf(fn: () => unknown): WebhookVerificationErrorCode {
  try {
    fn();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.code;
    throw error;
  }
  throw new Error('expected a WebhookVerificationError, but nothing was thrown');
}

describe('official Standard Webhooks vectors', () => {
  it.each(VECTORS)('signs $timestamp exactly', ({ timestamp, payload, signature }) => {
    expect(`v1,${sign(VECTOR_SECRET, VECTOR_ID, timestamp, payload)}`).toBe(signature);
    expect(signatureHeader([VECTOR_SECRET], VECTOR_ID, timestamp, payload)).toBe(signature);
    expect(signatureHeader([VECTOR_SECRET], VECTOR_ID, timestamp, Buffer.from(payload))).toBe(signature);
  });

  it.each(VECTORS)('verifies $timestamp and returns the parsed payload', ({ timestamp, payload, signature }) => {
    const headers = headersFor(signature, timestamp);
    expect(verify(payload, headers, VECTOR_SECRET, at(timestamp))).toEqual(JSON.parse(payload));
    expect(verify(Buffer.from(payload), headers, VECTOR_SECRET, at(timestamp))).toEqual(JSON.parse(payload));
  });
});

describe('generateSecret', () => {
  it('returns whsec_ + base64 of 32 random bytes', () => {
    const secret = generateSecret();
    expect(secret.startsWith(SECRET_PREFIX)).toBe(true);
    const encoded = secret.slice(SECRET_PREFIX.length);
    expect(Buffer.from(encoded, 'base64')).toHaveLength(32);
    expect(Buffer.from(encoded, 'base64').toString('base64')).toBe(encoded);
    expect(generateSecret()).not.toBe(secret);
  });

  it('produces secrets that sign and verify', () => {
    const secret = generateSecret();
    const body = '{"type":"video.completed"}';
    const headers = headersFor(signatureHeader([secret], 'msg_1', 1_700_000_000, body), 1_700_000_000, 'msg_1');
    expect(verify(body, headers, secret, at(1_700_000_000))).toEqual({ type: 'video.completed' });
  });
});

describe('sign and signatureHeader', () => {
  it('signs the exact bytes of a Buffer body, not its UTF-8 decoding', () => {
    // 0xff is not valid UTF-8, so decoding would turn it into U+FFFD.
    const bytes = Buffer.from([0x7b, 0xff, 0x7d]);
    expect(sign(VECTOR_SECRET, VECTOR_ID, 1, bytes)).not.toBe(sign(VECTOR_SECRET, VECTOR_ID, 1, bytes.toString()));
    const headers = headersFor(signatureHeader([VECTOR_SECRET], VECTOR_ID, 1, bytes), 1);
    expect(codeOf(() => verify(bytes.toString(), headers, VECTOR_SECRET, at(1)))).toBe('no_matching_signature');
  });

  it('emits one v1 entry per secret, in order', () => {
    const other = generateSecret();
    const header = signatureHeader([other, VECTOR_SECRET], VECTOR_ID, VECTOR_A.timestamp, VECTOR_A.payload);
    expect(header).toBe(`v1,${sign(other, VECTOR_ID, VECTOR_A.timestamp, VECTOR_A.payload)} ${VECTOR_A.signature}`);
  });

  it.each([
    ['no prefix', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    ['empty key', 'whsec_'],
    ['not base64', 'whsec_MfKQ9r8G!KYqrTwjUPD8ILPZIo2LaLaSw'],
    ['url-safe alphabet', 'whsec_MfKQ9r8G-KYqrTwjUPD8ILPZIo2LaLaSw'],
  ])('rejects a malformed secret (%s) with bad_secret', (_case, secret) => {
    expect(codeOf(() => sign(secret, VECTOR_ID, 1, '{}'))).toBe('bad_secret');
    expect(codeOf(() => signatureHeader([VECTOR_SECRET, secret], VECTOR_ID, 1, '{}'))).toBe('bad_secret');
    expect(codeOf(() => verify('{}', headersFor('v1,x', 1), secret, at(1)))).toBe('bad_secret');
  });

  it('rejects an empty secret list', () => {
    expect(codeOf(() => signatureHeader([], VECTOR_ID, 1, '{}'))).toBe('bad_secret');
    expect(codeOf(() => verify('{}', headersFor('v1,x', 1), [], at(1)))).toBe('bad_secret');
  });

  it.each([1.5, -1, Number.NaN, 2 ** 53])('refuses to sign timestamp %p', (timestamp) => {
    expect(() => sign(VECTOR_SECRET, VECTOR_ID, timestamp, '{}')).toThrow(RangeError);
  });
});

describe('verify rejects', () => {
  const { timestamp, payload, signature } = VECTOR_A;
  const good = headersFor(signature, timestamp);

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])('a missing %s header', (name) => {
    const headers: Record<string, string> = { ...good };
    delete headers[name];
    expect(codeOf(() => verify(payload, headers, VECTOR_SECRET, at(timestamp)))).toBe('missing_headers');
    expect(codeOf(() => verify(payload, { ...good, [name]: '' }, VECTOR_SECRET, at(timestamp)))).toBe('missing_headers');
  });

  it('a re-serialised body', () => {
    const reserialised = JSON.stringify(JSON.parse(VECTOR_B.payload));
    expect(reserialised).not.toBe(VECTOR_B.payload);
    const headers = headersFor(VECTOR_B.signature, VECTOR_B.timestamp);
    expect(codeOf(() => verify(reserialised, headers, VECTOR_SECRET, at(VECTOR_B.timestamp)))).toBe('no_matching_signature');
  });

  it('a tampered body', () => {
    const tampered = payload.replace('2432232314', '2432232315');
    expect(codeOf(() => verify(tampered, good, VECTOR_SECRET, at(timestamp)))).toBe('no_matching_signature');
  });

  it('a tampered webhook-id or webhook-timestamp', () => {
    expect(codeOf(() => verify(payload, { ...good, 'webhook-id': 'msg_other' }, VECTOR_SECRET, at(timestamp)))).toBe('no_matching_signature');
    const shifted = { ...good, 'webhook-timestamp': String(timestamp + 1) };
    expect(codeOf(() => verify(payload, shifted, VECTOR_SECRET, at(timestamp)))).toBe('no_matching_signature');
  });

  it('a timestamp 301 s old, but not one exactly 300 s old', () => {
    expect(codeOf(() => verify(payload, good, VECTOR_SECRET, at(timestamp + 301)))).toBe('timestamp_too_old');
    expect(verify(payload, good, VECTOR_SECRET, at(timestamp + 300))).toEqual(JSON.parse(payload));
  });

  it('a timestamp 301 s in the future, but not one exactly 300 s ahead', () => {
    expect(codeOf(() => verify(payload, good, VECTOR_SECRET, at(timestamp - 301)))).toBe('timestamp_too_new');
    expect(verify(payload, good, VECTOR_SECRET, at(timestamp - 300))).toEqual(JSON.parse(payload));
  });

  it('checks the timestamp before the signature, so stale replays are reported as such', () => {
    expect(codeOf(() => verify('tampered', good, VECTOR_SECRET, at(timestamp + 10_000)))).toBe('timestamp_too_old');
  });

  it('honours toleranceSeconds', () => {
    const options = { toleranceSeconds: 10, now: () => timestamp + 11 };
    expect(codeOf(() => verify(payload, good, VECTOR_SECRET, options))).toBe('timestamp_too_old');
    expect(verify(payload, good, VECTOR_SECRET, { toleranceSeconds: 10, now: () => timestamp + 10 })).toBeTruthy();
    expect(() => verify(payload, good, VECTOR_SECRET, { toleranceSeconds: -1 })).toThrow(RangeError);
  });

  it.each(['abc', '1614265330abc', '1614265330.0', '-1614265330', '0x6037b7f2', '01614265330', '1e9', '9'.repeat(20)])(
    'a non-numeric or non-canonical timestamp %p',
    (value) => {
      const headers = { ...good, 'webhook-timestamp': value };
      expect(codeOf(() => verify(payload, headers, VECTOR_SECRET, at(timestamp)))).toBe('bad_timestamp');
    },
  );

  it('a wrong secret', () => {
    expect(codeOf(() => verify(payload, good, generateSecret(), at(timestamp)))).toBe('no_matching_signature');
  });

  it('a header with only non-v1 entries, even if the signature itself is right', () => {
    const bare = signature.slice('v1,'.length);
    for (const header of [`v2,${bare}`, `v1a,${bare} V1,${bare}`, bare, `,${bare}`, `v2,${bare} v0,${bare}`]) {
      expect(codeOf(() => verify(payload, { ...good, 'webhook-signature': header }, VECTOR_SECRET, at(timestamp)))).toBe('no_matching_signature');
    }
  });

  it('a truncated or padded signature', () => {
    for (const header of [signature.slice(0, -1), `${signature}=`, `${signature}A`]) {
      expect(codeOf(() => verify(payload, { ...good, 'webhook-signature': header }, VECTOR_SECRET, at(timestamp)))).toBe('no_matching_signature');
    }
  });

  it('without revealing the expected signature in the error', () => {
    try {
      verify(payload, { ...good, 'webhook-signature': 'v1,AAAA' }, VECTOR_SECRET, at(timestamp));
      throw new Error('should have thrown');
    } catch (error) {
      expect(error).toBeInstanceOf(WebhookVerificationError);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).name).toBe('WebhookVerificationError');
      expect((error as Error).message).not.toContain(signature.slice(3));
    }
  });

  it('a parsed object instead of the raw body, with a TypeError that says so', () => {
    expect(() => verify(JSON.parse(payload) as unknown as string, good, VECTOR_SECRET, at(timestamp))).toThrow(/raw request body/);
  });

  it('a correctly signed body that is not JSON, with a SyntaxError', () => {
    const headers = headersFor(signatureHeader([VECTOR_SECRET], VECTOR_ID, timestamp, 'not json'), timestamp);
    expect(() => verify('not json', headers, VECTOR_SECRET, at(timestamp))).toThrow(SyntaxError);
  });

  it('an ambiguous repeated webhook-id', () => {
    const headers = { ...good, 'webhook-id': [VECTOR_ID, 'msg_other'] };
    expect(codeOf(() => verify(payload, headers, VECTOR_SECRET, at(timestamp)))).toBe('missing_headers');
  });
});

describe('verify accepts', () => {
  const { timestamp, payload, signature } = VECTOR_A;
  const expected = JSON.parse(payload);

  it('two entries where only the second matches (rotation overlap)', () => {
    const header = `${signatureHeader([generateSecret()], VECTOR_ID, timestamp, payload)} ${signature}`;
    expect(verify(payload, headersFor(header, timestamp), VECTOR_SECRET, at(timestamp))).toEqual(expected);
  });

  it('a header from signatureHeader with the old and the new secret, with either secret', () => {
    const next = generateSecret();
    const header = signatureHeader([next, VECTOR_SECRET], VECTOR_ID, timestamp, payload);
    expect(verify(payload, headersFor(header, timestamp), VECTOR_SECRET, at(timestamp))).toEqual(expected);
    expect(verify(payload, headersFor(header, timestamp), next, at(timestamp))).toEqual(expected);
  });

  it('secret arrays where any secret matches', () => {
    const headers = headersFor(signature, timestamp);
    expect(verify(payload, headers, [generateSecret(), VECTOR_SECRET], at(timestamp))).toEqual(expected);
    expect(verify(payload, headers, [VECTOR_SECRET, generateSecret()], at(timestamp))).toEqual(expected);
    expect(codeOf(() => verify(payload, headers, [generateSecret(), generateSecret()], at(timestamp)))).toBe('no_matching_signature');
  });

  it('unknown versions next to a matching v1 entry, and extra whitespace', () => {
    const header = `  v2,abcd   v1,AAAA ${signature} `;
    expect(verify(payload, headersFor(header, timestamp), VECTOR_SECRET, at(timestamp))).toEqual(expected);
  });

  it('mixed-case header names', () => {
    const headers = {
      'Webhook-Id': VECTOR_ID,
      'WEBHOOK-TIMESTAMP': String(timestamp),
      'webhook-Signature': signature,
    };
    expect(verify(payload, headers, VECTOR_SECRET, at(timestamp))).toEqual(expected);
  });

  it('array header values, as Node gives for repeated headers', () => {
    const headers: HeadersLike = {
      'webhook-id': [VECTOR_ID],
      'webhook-timestamp': [String(timestamp)],
      'webhook-signature': ['v1,AAAA', signature],
      'content-type': undefined,
    };
    expect(verify(payload, headers, VECTOR_SECRET, at(timestamp))).toEqual(expected);
  });

  it('a fetch Headers instance', () => {
    const headers = new Headers(headersFor(signature, timestamp));
    expect(verify(payload, headers, VECTOR_SECRET, at(timestamp))).toEqual(expected);
  });

  it('the current time by default', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = headersFor(signatureHeader([VECTOR_SECRET], VECTOR_ID, now, payload), now);
    expect(verify(payload, headers, VECTOR_SECRET)).toEqual(expected);
  });
});

describe('userAgent', () => {
  it('tolerates a trailing slash on the docs URL', () => {
    expect(userAgent('https://docs.example.com/')).toBe('Service-Webhooks/1.0 (+https://docs.example.com/webhooks)');
  });
});
