// The services run inside the Jest worker, from their sources, through the same start functions
// their main.ts calls: configuration read by loadConfig from the stack's env, the logger made as
// main.ts makes it but writing its lines to the test instead of stdout. What only a process has
// (its pid, signals that end it, its exit, stderr, crash points) is not here: suites that need it
// start processes (test/support/stack.ts).
import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger, loadConfig } from '@media/common';
import { startGatewayService } from '../../services/api-gateway/src/service';
import { startGeneratorService } from '../../services/generator/src/service';
import { startDispatcherService } from '../../services/webhook-dispatcher/src/service';

export type InProcessName = 'api-gateway' | 'generator' | 'webhook-dispatcher';

export interface InProcessHooks {
  /** Each log line as the process would print it on stdout, without its newline. */
  onLine(line: string): void;
  /** Start-up failed after the gateway listened: the process would exit with 1 here. */
  onStartFailed(err: unknown): void;
}

/** Starts one service in this process; resolves with its stop (the shutdown its main.ts runs on a signal). */
export async function startInProcess(name: InProcessName, env: NodeJS.ProcessEnv, hooks: InProcessHooks): Promise<{ stop(signal: string): Promise<void> }> {
  const config = loadConfig(env);
  if (config.faultCrashPoints.length > 0) throw new Error(`${name}: crash points end the process, so they need a service process, not an in-process one`);
  if (config.tracing.endpoint) throw new Error(`${name}: tracing is set up once per process, so it needs a service process, not an in-process one`);
  // The S3 store's credentials come from the SDK's default chain, which reads the process's own
  // environment (AWS_ACCESS_KEY_ID, …), not the config: they go there, shared by every service here.
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith('AWS_') || value === undefined) continue;
    if (process.env[key] !== undefined && process.env[key] !== value)
      throw new Error(`${name}: ${key} differs from this process's, which in-process services share`);
    process.env[key] = value;
  }
  const logger = createLogger(name, config.logLevel, config.logFormat);
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      partial += String(chunk);
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        hooks.onLine(line);
      }
      done();
    },
  });
  logger.clear().add(new winston.transports.Stream({ stream: sink }));
  switch (name) {
    case 'api-gateway':
      return startGatewayService(config, logger, { onStartFailed: hooks.onStartFailed });
    case 'generator':
      return startGeneratorService(config, logger);
    case 'webhook-dispatcher':
      return startDispatcherService(config, logger);
  }
}
