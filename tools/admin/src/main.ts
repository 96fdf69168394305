import { ConfigError } from '@media/common';
import { adminHelp, runAdmin, UsageError } from './admin';

const help = adminHelp(process.argv.slice(2));
if (help !== undefined) process.stdout.write(help);
else
  runAdmin(process.argv.slice(2))
    .then((result) => {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    })
    .catch((err) => {
      const known = err instanceof UsageError || err instanceof ConfigError;
      process.stderr.write(`${known ? err.message : `admin: ${err instanceof Error ? err.message : String(err)}`}\n`);
      process.exit(known ? 2 : 1);
    });
