import { createLogger, loadConfig } from '@media/common';
import { startDispatcherService } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('webhook-dispatcher', config.logLevel, config.logFormat);
  const dispatcher = await startDispatcherService(config, logger);
  const shutdown = (signal: string) => {
    void dispatcher.stop(signal).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
