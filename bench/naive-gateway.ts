/**
 * The gateway's naive peer: what a newcomer writes from the design card in an afternoon. Its own
 * process (forked like bench/bare-express.ts, driven over IPC), the same Redis as the gateway, and
 * per request: express.json(), the API key looked up by its SHA-256 (one HGET on a hash the bench
 * fills), the body validated with joi, the job record written (one HSET), the job added to a BullMQ
 * `generation` queue (Queue.add), and 202 with a body shaped like the gateway's.
 *
 * What it leaves out (docs/development.md, "Benchmarks"): no rate limit, no waiting-jobs cap, no
 * Idempotency-Key, no callback URL guard beyond "an https URI", no workspace index of jobs, no
 * shards, no priorities (fair scheduling), no request log, metrics, tracing or outage handling.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import express from 'express';
import { Redis } from 'ioredis';
import Joi from 'joi';
import { Queue } from 'bullmq';
import { serveHelper } from './ipc';

const PRICES: Record<string, number> = { '256x256': 0.005, '512x512': 0.01, '1024x1024': 0.04, '1536x1024': 0.06, '1024x1536': 0.06 };

interface ImageBody {
  model: string;
  prompt: string;
  size: string;
  callback_url?: string;
}

const schema = Joi.object<ImageBody>({
  model: Joi.string().valid('pixel-1').required(),
  prompt: Joi.string().min(1).max(4000).required(),
  size: Joi.string()
    .valid(...Object.keys(PRICES))
    .default('1024x1024'),
  callback_url: Joi.string().uri({ scheme: ['https'] }),
});

let server: Server | undefined;

function start(redisUrl: string, prefix: string): Server {
  const redis = new Redis(redisUrl);
  const queue = new Queue('generation', { connection: redis, prefix: `${prefix}:bull` });
  const app = express();
  app.use(express.json());

  app.post('/v1/images/generations', async (req, res) => {
    try {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const workspaceId = await redis.hget(`${prefix}:api-keys`, createHash('sha256').update(token).digest('hex'));
      if (!workspaceId) return void res.status(401).json({ error: { message: 'Invalid API key', type: 'authentication_error' } });

      const { value, error } = schema.validate(req.body);
      if (error) return void res.status(400).json({ error: { message: error.message, type: 'invalid_request_error' } });

      const id = `req_${randomBytes(12).toString('hex')}`;
      const now = Date.now();
      const record = { workspace_id: workspaceId, status: 'in_progress', ...value, created_ms: now };
      await redis.hset(`${prefix}:job:${id}`, record);
      await queue.add('image', { jobId: id }, { jobId: id, attempts: 3, backoff: { type: 'exponential', delay: 1000 } });
      const seconds = Math.floor(now / 1000);
      res.status(202).json({
        id,
        object: 'image.generation',
        created: seconds,
        model: value.model,
        status: 'in_progress',
        created_at: seconds,
        completed_at: null,
        data: [],
        url_expires_at: null,
        cost: PRICES[value.size],
        error: null,
        callback_url: value.callback_url ?? null,
      });
    } catch (err) {
      res.status(500).json({ error: { message: String(err), type: 'api_error' } });
    }
  });

  return app.listen(0, '127.0.0.1');
}

serveHelper({
  ping: () => true,
  listen: async (msg) => {
    server = start(String(msg.redisUrl), String(msg.prefix));
    await once(server, 'listening');
    return (server.address() as { port: number }).port;
  },
});
