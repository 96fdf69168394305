import express from 'express';
import { signatureHeader, verifyDelivery, WebhookVerificationError } from './webhook';
import type { VerifyOptions, WebhookVerificationErrorCode } from './webhook';

/** Options for {@link verifyWebhook}. */
export type VerifyWebhookOptions = VerifyOptions & {
  /** Largest body accepted, in body-parser notation. Default `'1mb'`. */
  limit?: string;
};

/**
 * Where the secrets come from when they can change while the receiver runs (a rotation): asked
 * once per delivery, so a receiver that keeps its secrets in a store needs no restart.
 */
export type WebhookSecretLookup = () => Promise<string | string[]>;

/** Body of the 400 response sent for a rejected delivery. */
export interface WebhookErrorResponse {
  error: {
    message: string;
    /** A verification code, or `invalid_json` when a correctly signed body is not JSON. */
    code: WebhookVerificationErrorCode | 'invalid_json';
  };
}

/**
 * Express middleware that verifies a Standard Webhooks delivery.
 *
 * It reads the raw body itself, so mount it on the webhook route before any
 * JSON body parser. On success `req.body` is the parsed payload and
 * `res.locals.webhookId` the `webhook-id` (use it to de-duplicate, spec 6.1).
 * On failure it answers 400 with {@link WebhookErrorResponse}. Body read
 * errors (such as 413 over `limit`) go to `next(err)`.
 *
 * @param secret - one `whsec_` secret or several (any may match), or a lookup
 *   that gives them for each delivery. A lookup that fails, or gives a malformed
 *   secret, passes the error to `next(err)` (a 5xx, so the sender tries again
 *   later) rather than answering 400 for a delivery that may well be valid.
 * @throws {@link WebhookVerificationError} `bad_secret` immediately if a secret is malformed.
 */
export function verifyWebhook(secret: string | string[] | WebhookSecretLookup, options: VerifyWebhookOptions = {}): express.RequestHandler {
  const { limit = '1mb', ...verifyOptions } = options;
  // Check the secrets now: a typo should stop the server at start-up, not turn
  // into 400s that the sender retries for hours before giving up.
  if (typeof secret !== 'function') checkSecrets(secret);

  // Read every body whatever its content-type: the signature covers the bytes,
  // and a missing content-type must not make the body look empty.
  const readRawBody = express.raw({ type: () => true, limit });

  return (req, res, next) => {
    readRawBody(req, res, (readError?: unknown) => {
      if (readError) {
        next(readError);
        return;
      }
      const raw: unknown = req.body ?? Buffer.alloc(0);
      if (!Buffer.isBuffer(raw)) {
        // Another parser already consumed the stream; the exact bytes are gone
        // and no signature could ever match, so report the wiring mistake.
        next(new Error('verifyWebhook() needs the raw body; mount it before express.json() or other body parsers'));
        return;
      }

      if (typeof secret !== 'function') {
        verifyThenNext(raw, secret);
        return;
      }
      secret()
        .then((current) => (checkSecrets(current), current))
        .then((current) => verifyThenNext(raw, current), next);
    });

    function verifyThenNext(raw: Buffer, current: string | string[]): void {
      let delivery;
      try {
        delivery = verifyDelivery(raw, req.headers, current, verifyOptions);
      } catch (error) {
        if (error instanceof WebhookVerificationError) {
          reject(res, error.code, error.message);
          return;
        }
        next(error);
        return;
      }

      try {
        req.body = JSON.parse(delivery.body.toString('utf8'));
      } catch {
        reject(res, 'invalid_json', 'Webhook body is not valid JSON');
        return;
      }
      res.locals.webhookId = delivery.msgId;
      next();
    }
  };
}

/** Signing a dummy message runs exactly the secret checks verification uses. */
function checkSecrets(secret: string | string[]): void {
  signatureHeader(Array.isArray(secret) ? secret : [secret], 'msg_secret_check', 0, '');
}

function reject(res: express.Response, code: WebhookErrorResponse['error']['code'], message: string): void {
  const body: WebhookErrorResponse = { error: { message, code } };
  res.status(400).json(body);
}
