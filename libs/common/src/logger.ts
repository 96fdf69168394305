import winston from 'winston';

export type Logger = winston.Logger;

/** Header and field names that must never reach a log line. */
const SECRET_FIELDS = /authorization|api_?key|secret|password|signature|token/i;

const redact = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (SECRET_FIELDS.test(key)) info[key] = '[redacted]';
  }
  return info;
});

/** Services that check callback URLs say loudly at start-up when the development relaxations are on. */
export function warnIfCallbackChecksRelaxed(config: { callbackAllowHttp: boolean; callbackAllowedCidrs: string[] }, logger: Logger): void {
  if (!config.callbackAllowHttp && config.callbackAllowedCidrs.length === 0) return;
  logger.warn('CALLBACK URL CHECKS RELAXED: for development and tests only', {
    allow_http: config.callbackAllowHttp,
    allowed_cidrs: config.callbackAllowedCidrs,
  });
}

/** JSON lines on stdout; callers add `request_id` / `job_id` through child loggers. */
export function createLogger(service: string, level = 'info'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { service },
    format: winston.format.combine(redact(), winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
