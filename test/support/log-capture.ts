// A logger made as the services make theirs (JSON lines, secret fields redacted) whose lines an
// in-process test reads back, where a ServiceProcess would read them from a child's stdout.
import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger, type Logger } from '@media/common';

export interface CapturedLog {
  logger: Logger;
  /** Every line as the service would print it, parsed. */
  lines: Record<string, unknown>[];
  /** Every line as written, for checks that a secret appears nowhere. */
  text(): string;
}

export function capturingLogger(service: string): CapturedLog {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const logger = createLogger(service, 'debug');
  const sink = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (line === '') continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  logger.clear().add(new winston.transports.Stream({ stream: sink }));
  return { logger, lines, text: () => raw.join('\n') };
}
