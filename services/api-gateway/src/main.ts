import { createLogger, sweepStaleScratch, loadConfig } from '@media/common';
import { startGatewayService } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('api-gateway', config.logLevel, config.logFormat);
  // What a process killed outright left in its scratch directory (uploads, a video's frames) goes now:
  // nothing else would ever remove it, and in a pod it fills the emptyDir towards eviction.
  const swept = await sweepStaleScratch();
  if (swept > 0) logger.info('removed the temporary files of processes that were killed', { directories: swept });
  const gateway = await startGatewayService(config, logger, { onStartFailed: () => process.exit(1) });

  const shutdown = (signal: string) => {
    void gateway.stop(signal).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
