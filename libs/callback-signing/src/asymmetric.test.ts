// `v1a`: ed25519 signatures beside the HMAC ones. Checked against two implementations that share
// no code with ours (node:crypto fed the raw key bytes, and @noble/ed25519), and against the
// verifiers receivers already run, which must keep accepting the `v1` entry of the same header.
import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { generateKeyPair, generateSecret, publicKeyOf, signAsymmetric, signatureHeader, verify } from './index';

const body = JSON.stringify({ type: 'image.completed', timestamp: '2026-11-26T10:00:00.000Z', data: { id: 'req_1', prompt: 'caf\u00e9 \u{1F3AC}' } });
const raw = (serialised: string) => Buffer.from(serialised.slice(5), 'base64');

function delivery(secrets: string[], secretKeys: string[], msgId = 'msg_v1a') {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    timestamp,
    msgId,
    headers: { 'webhook-id': msgId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(secrets, msgId, timestamp, body, secretKeys) },
  };
}

describe('v1a key pairs', () => {
  it('serialises the keys as the specification says: whsk_ and whpk_ followed by base64 of 32 bytes', () => {
    const { secretKey, publicKey } = generateKeyPair();
    expect(secretKey).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(publicKeyOf(secretKey)).toBe(publicKey);
  });

  it('adds a v1a entry per key after the v1 entries, and verifies with the public key alone', () => {
    const secret = generateSecret();
    const { secretKey, publicKey } = generateKeyPair();
    const { headers, timestamp } = delivery([secret], [secretKey]);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]{44} v1a,[A-Za-z0-9+/]{86}==$/);
    expect(verify(body, headers, publicKey, { now: () => timestamp })).toEqual(JSON.parse(body));
    expect(() => verify(body, headers, generateKeyPair().publicKey, { now: () => timestamp })).toThrow('No matching webhook signature');
    expect(() => verify(body.replace('req_1', 'req_2'), headers, publicKey, { now: () => timestamp })).toThrow('No matching webhook signature');
    // A public key never checks a v1 entry, nor a secret a v1a one.
    const v1Only = { ...headers, 'webhook-signature': headers['webhook-signature'].split(' ')[0] };
    expect(() => verify(body, v1Only, publicKey, { now: () => timestamp })).toThrow('No matching webhook signature');
    expect(() => verify(body, headers, 'whpk_bm90IGEga2V5', { now: () => timestamp })).toThrow('32 bytes');
  });

  it('signs what node:crypto, given only the raw public key, and @noble/ed25519 verify', async () => {
    // ESM-only, so loaded the way the sender loads got.
    const ed = await import('@noble/ed25519');
    const { secretKey, publicKey } = generateKeyPair();
    const { headers, msgId, timestamp } = delivery([generateSecret()], [secretKey]);
    const signature = Buffer.from(headers['webhook-signature'].split(' ')[1].slice('v1a,'.length), 'base64');
    const content = Buffer.from(`${msgId}.${timestamp}.${body}`, 'utf8');
    const jwk = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw(publicKey).toString('base64url') }, format: 'jwk' });
    expect(cryptoVerify(null, content, jwk, signature)).toBe(true);
    expect(await ed.verifyAsync(signature, content, raw(publicKey))).toBe(true);
    expect(await ed.verifyAsync(signature, Buffer.from(`${msgId}.${timestamp + 1}.${body}`), raw(publicKey))).toBe(false);
    // ed25519 is deterministic: @noble signs the same bytes from the same seed, and ours verifies them.
    const theirs = Buffer.from(await ed.signAsync(content, raw(secretKey))).toString('base64');
    expect(theirs).toBe(signAsymmetric(secretKey, msgId, timestamp, body));
    const withTheirs = { ...headers, 'webhook-signature': `v1a,${theirs}` };
    expect(verify(body, withTheirs, publicKey, { now: () => timestamp })).toEqual(JSON.parse(body));
  });

  it('leaves the v1 entry to the verifiers receivers already run (standardwebhooks, svix, openai)', async () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], [generateKeyPair().secretKey]);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    const { Webhook: Svix } = await import('svix');
    // svix 2 answers nothing when the signature holds and throws when it does not.
    expect(() => new Svix(secret).verify(body, headers)).not.toThrow();
    expect(() => new Svix(secret).verify(body.replace('req_1', 'req_2'), headers)).toThrow();
    await expect(new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(body, headers)).resolves.toEqual(JSON.parse(body));
  });
});
