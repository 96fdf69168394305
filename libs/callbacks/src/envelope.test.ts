import type { ImageRequestObject } from '@media/domain';
import { createPublicKey, verify as edVerify } from 'node:crypto';
import { generateKeyPair, signingKeys, verify } from '@media/callback-signing';
import { buildBody, buildHeaders } from './envelope';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER = 'whsec_dGhlIG9sZCBzZWNyZXQgc3RpbGwgc2lnbmluZw==';

const image: ImageRequestObject = {
  id: 'req_1',
  object: 'image.generation',
  created: 1_700_000_003,
  model: 'pixel-1',
  status: 'completed',
  created_at: 1_700_000_000,
  completed_at: 1_700_000_003,
  data: [{ url: 'https://api.example.com/v1/files/ws/req_1/0.png?expires=1&signature=s' }],
  url_expires_at: 1_700_086_403,
  cost: 0.005,
  error: null,
  callback_url: 'https://hooks.example.com/cb',
};

describe('buildBody', () => {
  it('is the envelope {type, timestamp, data} with the event time in ISO 8601 UTC milliseconds', () => {
    const body = buildBody('image.completed', 1_700_000_003_045, image);
    expect(JSON.parse(body.toString('utf8'))).toEqual({ type: 'image.completed', timestamp: '2023-11-14T22:13:23.045Z', data: image });
    expect(Object.keys(JSON.parse(body.toString('utf8')))).toEqual(['type', 'timestamp', 'data']);
  });

  it('keeps milliseconds even when they are zero', () => {
    expect(JSON.parse(buildBody('image.failed', 1_700_000_000_000, image).toString()).timestamp).toBe('2023-11-14T22:13:20.000Z');
  });
});

describe('buildHeaders', () => {
  const body = buildBody('image.completed', 1_700_000_003_045, image);

  it('carries exactly the headers of spec 4.5', () => {
    const headers = buildHeaders({
      messageId: 'msg_abc',
      timestampSeconds: 1_700_000_010,
      body,
      keys: signingKeys([SECRET]),
      docsUrl: 'https://docs.example.com',
    });
    expect(Object.keys(headers).sort()).toEqual(['content-type', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['user-agent']).toBe('Service-Webhooks/1.0 (+https://docs.example.com/webhooks)');
    expect(headers['webhook-id']).toBe('msg_abc');
    expect(headers['webhook-timestamp']).toBe('1700000010');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('signs the exact body bytes, verifiable with the shared verify()', () => {
    const headers = buildHeaders({ messageId: 'msg_abc', timestampSeconds: 1_700_000_010, body, keys: signingKeys([SECRET]), docsUrl: 'https://d' });
    expect(verify(body, headers, SECRET, { now: () => 1_700_000_010 })).toEqual(JSON.parse(body.toString()));
    const altered = Buffer.from(body.toString().replace('0.005', '0.0050'));
    expect(() => verify(altered, headers, SECRET, { now: () => 1_700_000_010 })).toThrow('No matching webhook signature');
  });

  it('adds one space-separated signature per active secret, each valid on its own', () => {
    const headers = buildHeaders({ messageId: 'msg_abc', timestampSeconds: 1_700_000_010, body, keys: signingKeys([SECRET, OTHER]), docsUrl: 'https://d' });
    const entries = headers['webhook-signature'].split(' ');
    expect(entries).toHaveLength(2);
    for (const [index, secret] of [SECRET, OTHER].entries()) {
      const alone = { ...headers, 'webhook-signature': entries[index] };
      expect(() => verify(body, alone, secret, { now: () => 1_700_000_010 })).not.toThrow();
    }
  });

  it('adds a v1a entry per ed25519 key after the v1 entries, each verifying with node:crypto from the raw public key', () => {
    const pairs = [generateKeyPair(), generateKeyPair()];
    const headers = buildHeaders({
      messageId: 'msg_abc',
      timestampSeconds: 1_700_000_010,
      body,
      keys: signingKeys(
        [SECRET],
        pairs.map((k) => k.secretKey),
      ),
      docsUrl: 'https://d',
    });
    const entries = headers['webhook-signature'].split(' ');
    expect(entries.map((e) => e.split(',')[0])).toEqual(['v1', 'v1a', 'v1a']);
    const signed = Buffer.concat([Buffer.from('msg_abc.1700000010.'), body]);
    for (const [index, { publicKey }] of pairs.entries()) {
      const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
      const signature = Buffer.from(entries[index + 1].slice('v1a,'.length), 'base64');
      expect(edVerify(null, signed, key, signature)).toBe(true);
      expect(edVerify(null, Buffer.concat([signed, Buffer.from(' ')]), key, signature)).toBe(false);
    }
    // The v1 entry is untouched by the v1a ones.
    expect(() => verify(body, headers, SECRET, { now: () => 1_700_000_010 })).not.toThrow();
  });

  it('refuses to sign without a secret', () => {
    expect(() => buildHeaders({ messageId: 'msg_abc', timestampSeconds: 1, body, keys: signingKeys([]), docsUrl: 'https://d' })).toThrow(
      'At least one webhook secret',
    );
  });
});
