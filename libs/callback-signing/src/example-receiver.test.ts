import request from 'supertest';
import { createExampleReceiver } from './example-receiver';
import type { CallbackEvent } from './example-receiver';
import { generateSecret, signatureHeader } from './index';

// Bodies are sent as strings: supertest sends those verbatim, whereas it would
// JSON-serialise a Buffer under an application/json content-type.
const secret = generateSecret();
const event: CallbackEvent = {
  type: 'video.completed',
  timestamp: '2025-01-02T03:04:05.678Z',
  data: { id: 'video_123', object: 'video', status: 'completed' },
};
const body = JSON.stringify(event);

function signed(msgId: string, payload = body) {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader([secret], msgId, timestamp, payload),
  };
}

function setup(onEvent = jest.fn()) {
  const logger = { info: jest.fn(), error: jest.fn() };
  return { app: createExampleReceiver({ secret, onEvent, logger }), onEvent, logger };
}

describe('example receiver', () => {
  it('answers 200 to a valid delivery and forwards the event with its id', async () => {
    const { app, onEvent, logger } = setup();
    const res = await request(app).post('/webhooks').set(signed('msg_a')).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    expect(onEvent).toHaveBeenCalledWith(event, 'msg_a');
    expect(logger.info).toHaveBeenCalledWith('webhook msg_a: video.completed');
  });

  it('answers 400 in the JSON error shape to an invalid delivery and forwards nothing', async () => {
    const { app, onEvent } = setup();
    const res = await request(app).post('/webhooks').set(signed('msg_b')).send(body.replace('video_123', 'video_999'));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { message: expect.any(String), code: 'no_matching_signature' } });
    expect(onEvent).not.toHaveBeenCalled();
  });

  it('answers 200 to a repeated webhook-id but forwards the event once', async () => {
    const { app, onEvent } = setup();
    const first = await request(app).post('/webhooks').set(signed('msg_c')).send(body);
    // A retry is re-signed with a new timestamp but keeps its webhook-id (spec 4.5).
    const retry = await request(app).post('/webhooks').set(signed('msg_c')).send(body);
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ received: true, duplicate: true });
    expect(onEvent).toHaveBeenCalledTimes(1);

    await request(app).post('/webhooks').set(signed('msg_d')).send(body).expect(200);
    expect(onEvent).toHaveBeenCalledTimes(2);
  });

  it('does not wait for a slow handler, and only logs a failing one', async () => {
    let finish: () => void = () => undefined;
    const slow = jest.fn(() => new Promise<void>((resolve) => (finish = resolve)));
    const { app } = setup(slow);
    await request(app).post('/webhooks').set(signed('msg_e')).send(body).expect(200);
    expect(slow).toHaveBeenCalledTimes(1);
    finish();

    const failing = jest.fn(async () => {
      throw new Error('downstream unavailable');
    });
    const { app: app2, logger } = setup(failing);
    await request(app2).post('/webhooks').set(signed('msg_f')).send(body).expect(200);
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.error).toHaveBeenCalledWith('webhook msg_f: handler failed', expect.any(Error));
  });
});
