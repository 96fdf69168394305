import { createServer } from 'node:http';
import { CallbackUrlGuard } from '@media/callback-guard';
import { createLogger, createRedis, JobQueue, loadConfig, warnIfCallbackChecksRelaxed } from '@media/common';
import { JobPresenter, LinkSigner } from '@media/domain';
import { FileBlobStore, IdempotencyRepository, JobRepository, loadLinkSigningKey, StoreKeys, WorkspaceRepository } from '@media/storage';
import { createApp } from './app';
import { JobIntakeService } from './job-intake';
import { JobWaiter } from './job-waiter';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.logLevel);
  warnIfCallbackChecksRelaxed(config, logger);
  const redis = createRedis(config.redisUrl, 'request');
  const keys = new StoreKeys(config.keyPrefix);
  const jobs = new JobRepository(redis, keys);
  const blobs = new FileBlobStore(config.mediaDir);
  const links = new LinkSigner(await loadLinkSigningKey(redis, keys, config.linkSigningSecret), config.publicBaseUrl, config.linkTtlSeconds);
  const generation = new JobQueue('generation', redis, config.keyPrefix, logger, { attempts: config.generationAttempts });
  const waiter = new JobWaiter(createRedis(config.redisUrl, 'worker'), keys, jobs);
  const app = createApp({
    redis,
    logger,
    workspaces: new WorkspaceRepository(redis, keys),
    jobs,
    blobs,
    links,
    presenter: new JobPresenter(links, config.mediaRetentionSeconds),
    intake: new JobIntakeService(
      jobs,
      blobs,
      new IdempotencyRepository(redis, keys, config.idempotencyTtlSeconds),
      generation,
      new CallbackUrlGuard({ allowHttp: config.callbackAllowHttp, allowedCidrs: config.callbackAllowedCidrs }),
    ),
    waiter,
    syncImageTimeoutMs: config.syncImageTimeoutMs,
    maxUploadBytes: config.maxUploadBytes,
    maxJsonBytes: config.maxJsonBytes,
  });

  const server = createServer(app);
  server.listen(config.port, () => logger.info('api-gateway listening', { port: config.port }));

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    // Stop accepting, let in-flight requests (including waiting sync image calls) finish, then close.
    stopping ??= (async () => {
      logger.info('draining', { signal });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = new Promise<void>((r) => setTimeout(r, config.shutdownTimeoutMs).unref());
      await Promise.race([closed, deadline]);
      await waiter.close();
      await generation.close();
      await redis.quit();
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
