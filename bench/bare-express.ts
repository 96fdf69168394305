/**
 * The peer of the gateway's asynchronous image acceptance: a bare Express app in its own process
 * that parses the same JSON body (express.json, the gateway's 1 MiB cap) and answers 202 with the
 * gateway's 202 body as JSON. No authentication, no validation, no Redis: the floor Express itself
 * sets on this machine.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import express from 'express';
import { serveHelper } from './ipc';

let server: Server | undefined;

serveHelper({
  ping: () => true,
  listen: async (msg) => {
    const reply = JSON.parse(String(msg.reply)) as unknown;
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '1mb' }));
    app.post('/v1/images/generations', (req, res) => {
      if (typeof (req.body as { prompt?: unknown })?.prompt !== 'string') {
        res.status(400).json({ error: 'prompt' });
        return;
      }
      res.status(202).json(reply);
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return (server.address() as { port: number }).port;
  },
});
