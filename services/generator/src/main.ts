import { createLogger, loadConfig, sweepStaleScratch } from '@media/common';
import { startGeneratorService } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('generator', config.logLevel, config.logFormat);
  // What a process killed outright left in its scratch directory (uploads, a video's frames) goes now:
  // nothing else would ever remove it, and in a pod it fills the emptyDir towards eviction.
  const swept = await sweepStaleScratch();
  if (swept > 0) logger.info('removed the temporary files of processes that were killed', { directories: swept });
  const generator = await startGeneratorService(config, logger);
  const shutdown = (signal: string) => {
    void generator.stop(signal).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
