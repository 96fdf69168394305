import express from 'express';
import request from 'supertest';
import { generateSecret, signatureHeader, verifyWebhook, WebhookVerificationError } from './index';
import type { VerifyWebhookOptions, WebhookErrorResponse } from './index';

// Bodies are sent as strings: supertest sends those verbatim, whereas it would
// JSON-serialise a Buffer under an application/json content-type.
const secret = generateSecret();
const body = '{"type": "image.completed", "timestamp": "2025-01-02T03:04:05.678Z", "data": {"id": "img_1"}}';

function signed(payload: string | Buffer, msgId = 'msg_middleware1', timestamp = Math.floor(Date.now() / 1000)) {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader([secret], msgId, timestamp, payload),
  };
}

function appWith(options?: VerifyWebhookOptions, before?: express.RequestHandler): express.Express {
  const app = express();
  if (before) app.use(before);
  app.post('/hook', verifyWebhook(secret, options), (req, res) => {
    res.json({ body: req.body, webhookId: res.locals.webhookId });
  });
  // Distinguishes errors passed to next() from the middleware's own 400s.
  const errorHandler: express.ErrorRequestHandler = (error: Error & { status?: number }, _req, res, _next) => {
    res.status(error.status ?? 500).json({ nextError: error.message });
  };
  app.use(errorHandler);
  return app;
}

describe('verifyWebhook', () => {
  it('passes a valid delivery on with the parsed body and res.locals.webhookId', async () => {
    const res = await request(appWith()).post('/hook').set(signed(body)).set('content-type', 'application/json').send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ body: JSON.parse(body), webhookId: 'msg_middleware1' });
  });

  it('reads the body whatever the content-type says', async () => {
    for (const type of ['text/plain', 'application/octet-stream', 'application/json; charset=utf-8']) {
      const res = await request(appWith()).post('/hook').set(signed(body)).set('content-type', type).send(body);
      expect(res.body.body).toEqual(JSON.parse(body));
      expect(res.status).toBe(200);
    }
  });

  it('verifies the exact bytes received, including ones that are not valid UTF-8', async () => {
    const bytes = Buffer.concat([Buffer.from('"caf'), Buffer.from([0xe9]), Buffer.from('"')]);
    const headers = signed(bytes);
    // Non-JSON content-types let supertest send a Buffer untouched.
    const post = (payload: Buffer) => request(appWith()).post('/hook').set(headers).set('content-type', 'application/octet-stream').send(payload);
    expect((await post(bytes)).status).toBe(200);
    expect((await post(Buffer.from(bytes.toString('utf8')))).status).toBe(400);
  });

  it('answers 400 with {error:{message, code}} for a bad signature', async () => {
    const res = await request(appWith()).post('/hook').set(signed(body)).set('content-type', 'application/json').send(body.replace('img_1', 'img_2'));
    expect(res.status).toBe(400);
    expect(res.body).toEqual<WebhookErrorResponse>({
      error: { message: expect.any(String), code: 'no_matching_signature' },
    });
  });

  it('answers 400 missing_headers for an unsigned request', async () => {
    const res = await request(appWith()).post('/hook').set('content-type', 'application/json').send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('missing_headers');
  });

  it('answers 400 timestamp_too_old for a stale delivery, using the now option', async () => {
    const timestamp = 1_700_000_000;
    const app = appWith({ now: () => timestamp + 301 });
    const res = await request(app)
      .post('/hook')
      .set(signed(body, 'msg_old', timestamp))
      .send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('timestamp_too_old');
  });

  it('answers 400 invalid_json for a correctly signed body that is not JSON', async () => {
    const res = await request(appWith()).post('/hook').set(signed('not json')).send('not json');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { message: expect.any(String), code: 'invalid_json' } });
  });

  it('accepts any of several secrets', async () => {
    const app = express();
    app.post('/hook', verifyWebhook([generateSecret(), secret]), (_req, res) => {
      res.sendStatus(204);
    });
    const res = await request(app).post('/hook').set(signed(body)).send(body);
    expect(res.status).toBe(204);
  });

  it('asks a secret lookup on every delivery, so a rotated secret verifies without a restart', async () => {
    let current: string[] = [generateSecret()];
    let asked = 0;
    const app = express();
    app.post(
      '/hook',
      verifyWebhook(async () => (asked++, current)),
      (_req, res) => {
        res.sendStatus(204);
      },
    );
    expect((await request(app).post('/hook').set(signed(body)).send(body)).status).toBe(400);
    current = [secret];
    expect((await request(app).post('/hook').set(signed(body)).send(body)).status).toBe(204);
    expect(asked).toBe(2);
  });

  it('passes a failing lookup, or a malformed secret from it, to next() rather than answering 400', async () => {
    for (const lookup of [async () => Promise.reject(new Error('store down')), async () => 'not-a-secret']) {
      const app = express();
      app.post('/hook', verifyWebhook(lookup), (_req, res) => {
        res.sendStatus(204);
      });
      app.use(((error: Error, _req, res, _next) => res.status(503).json({ nextError: error.message })) as express.ErrorRequestHandler);
      const res = await request(app).post('/hook').set(signed(body)).send(body);
      expect(res.status).toBe(503);
      expect(res.body.nextError).toMatch(/store down|must start with "whsec_"/);
    }
  });

  it('throws at construction for a malformed secret', () => {
    expect(() => verifyWebhook('not-a-secret')).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook([secret, 'whsec_'])).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook([])).toThrow(WebhookVerificationError);
  });

  it('passes an over-limit body to next() as a 413', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(2048) });
    const res = await request(appWith({ limit: '1kb' }))
      .post('/hook')
      .set(signed(big))
      .send(big);
    expect(res.status).toBe(413);
    expect(res.body.nextError).toBeDefined();
  });

  it('reports a JSON parser mounted in front of it instead of failing every signature', async () => {
    const res = await request(appWith({}, express.json())).post('/hook').set(signed(body)).set('content-type', 'application/json').send(body);
    expect(res.status).toBe(500);
    expect(res.body.nextError).toMatch(/before express\.json/);
  });
});
