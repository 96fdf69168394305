/**
 * Example callback receiver: what a client of the service runs at its
 * `callback_url`. Run it with `WEBHOOK_SECRET=whsec_... PORT=9000 npx tsx
 * libs/callback-signing/src/example-receiver.ts` and POST deliveries to `/webhooks`.
 */
import express from 'express';
import { verifyWebhook, type WebhookSecretLookup } from './middleware';

/** Callback envelope, spec section 2.3. */
export interface CallbackEvent {
  type: 'video.completed' | 'video.failed' | 'image.completed' | 'image.failed' | (string & {});
  timestamp: string;
  data: Record<string, unknown>;
}

/** Options for {@link createExampleReceiver}. */
export interface ExampleReceiverOptions {
  /**
   * Signing secret from the dashboard; pass two while switching to a rotated one, or a lookup that
   * reads the current ones for each delivery (then a rotation needs no restart).
   */
  secret: string | string[] | WebhookSecretLookup;
  /** Receives each event once. Runs after the 200 has been sent; its errors are only logged. */
  onEvent?: (event: CallbackEvent, webhookId: string) => void | Promise<void>;
  /** Where to log; defaults to the console. */
  logger?: Pick<Console, 'info' | 'error'>;
}

/**
 * Deliveries are retried for about 11 hours (spec section 8), so ids only need
 * remembering that long; the cap keeps this demo's memory bounded.
 */
const MAX_REMEMBERED_IDS = 10_000;

/**
 * Builds an Express app with `POST /webhooks` that verifies the signature,
 * drops repeated deliveries of the same `webhook-id` and hands each event to
 * `onEvent`.
 */
export function createExampleReceiver({ secret, onEvent, logger = console }: ExampleReceiverOptions): express.Express {
  // A real receiver records the webhook-id in its database under a unique key,
  // in the same transaction as the work the event triggers, so duplicates are
  // caught across restarts and across instances. An in-memory Set is neither.
  const seen = new Set<string>();

  const forward = async (event: CallbackEvent, webhookId: string): Promise<void> => {
    try {
      await onEvent?.(event, webhookId);
    } catch (error) {
      // The 200 is already sent, so the sender will not retry; a real receiver
      // would queue the event for its own retry instead of only logging.
      logger.error(`webhook ${webhookId}: handler failed`, error);
    }
  };

  const app = express();
  app.post('/webhooks', verifyWebhook(secret), (req, res) => {
    const webhookId = res.locals.webhookId as string;
    if (seen.has(webhookId)) {
      // Still 2xx: the sender retries anything else, and the first copy was handled.
      res.status(200).json({ received: true, duplicate: true });
      return;
    }
    seen.add(webhookId);
    if (seen.size > MAX_REMEMBERED_IDS) {
      // Sets iterate in insertion order, so this forgets the oldest id.
      seen.delete(seen.values().next().value as string);
    }

    // Answer before doing any work: the sender waits only 15 seconds
    // (spec 4.5) and counts anything slower as a failed attempt.
    res.status(200).json({ received: true });

    const event = req.body as CallbackEvent;
    logger.info(`webhook ${webhookId}: ${String(event?.type)}`);
    void forward(event, webhookId);
  });
  return app;
}

if (require.main === module) {
  // This is an example program, so it reads its configuration from the
  // environment here; the library itself takes everything as arguments.
  const secrets = (process.env.WEBHOOK_SECRET ?? '').split(/[\s,]+/).filter(Boolean);
  if (secrets.length === 0) {
    console.error('Set WEBHOOK_SECRET to the whsec_... signing secret (two, comma-separated, while rotating)');
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 9000);
  createExampleReceiver({ secret: secrets }).listen(port, () => {
    console.info(`example webhook receiver listening on http://localhost:${port}/webhooks`);
  });
}
