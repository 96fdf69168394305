// Receivers will verify our deliveries with off-the-shelf libraries, so these
// tests pin compatibility with the reference Standard Webhooks package and with
// the OpenAI SDK's webhook verifier.
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { generateSecret, signatureHeader, verify } from './index';

// Both libraries read the wall clock and have no injectable "now", so sign with the current time.
function delivery(secrets: string[], body: string, msgId = 'msg_2xQ9interop') {
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, msgId, timestamp, body),
  };
  return { timestamp, headers };
}

const body = JSON.stringify({
  type: 'video.completed',
  timestamp: '2025-01-02T03:04:05.678Z',
  data: { id: 'video_123', object: 'video', status: 'completed', prompt: 'caf\u00e9 \u{1F3AC}' },
});

describe('standardwebhooks package', () => {
  it('verifies our signatureHeader', () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(secret).verify(Buffer.from(body), headers)).toEqual(JSON.parse(body));
  });

  it('verifies a two-secret rotation header with either secret', () => {
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const { headers } = delivery([newSecret, oldSecret], body);
    expect(new Webhook(oldSecret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(newSecret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('rejects a tampered body signed by us (the check is real)', () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], body);
    expect(() => new Webhook(secret).verify(body.replace('video_123', 'video_124'), headers)).toThrow('No matching signature found');
  });

  it('produces signatures that our verify accepts', () => {
    const secret = generateSecret();
    const msgId = 'msg_fromReferenceLib';
    const timestamp = 1_735_787_045;
    const signature = new Webhook(secret).sign(msgId, new Date(timestamp * 1000), body);
    const headers = { 'webhook-id': msgId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    expect(signature).toBe(signatureHeader([secret], msgId, timestamp, body));
    expect(verify(body, headers, secret, { now: () => timestamp })).toEqual(JSON.parse(body));
  });
});

describe('openai package webhooks.unwrap', () => {
  // unwrap(payload: string, headers: HeadersLike, secret?, tolerance = 300): Promise<event>.
  // It is async (WebCrypto), takes the body as a string only, and accepts a
  // plain record or a Headers instance (it normalises both via buildHeaders).
  function client(secret: string): OpenAI {
    return new OpenAI({ apiKey: 'x', webhookSecret: secret });
  }

  it('verifies our signatureHeader given a plain header record', async () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], body);
    await expect(client(secret).webhooks.unwrap(body, headers)).resolves.toEqual(JSON.parse(body));
  });

  it('verifies our signatureHeader given a Headers instance', async () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], body);
    await expect(client(secret).webhooks.unwrap(body, new Headers(headers))).resolves.toEqual(JSON.parse(body));
  });

  it('verifies a two-secret rotation header with either secret', async () => {
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const { headers } = delivery([newSecret, oldSecret], body);
    await expect(client(oldSecret).webhooks.unwrap(body, headers)).resolves.toEqual(JSON.parse(body));
    await expect(client(newSecret).webhooks.unwrap(body, headers)).resolves.toEqual(JSON.parse(body));
  });

  it('rejects a tampered body signed by us (the check is real)', async () => {
    const secret = generateSecret();
    const { headers } = delivery([secret], body);
    await expect(client(secret).webhooks.unwrap(body.replace('video_123', 'video_124'), headers)).rejects.toThrow(OpenAI.InvalidWebhookSignatureError);
  });
});
