import { loadConfig } from '@media/common';

/** The settings (environment variables) the admin CLI's commands read, as the services read them. */
export type AdminSetting =
  | 'REDIS_URL'
  | 'KEY_PREFIX'
  | 'SECRETS_ENCRYPTION_KEYS'
  | 'SECRET_ROTATION_OVERLAP_SECONDS'
  | 'LINK_SIGNING_SECRET'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'RATE_LIMIT_CREATE_PER_MINUTE'
  | 'RATE_LIMIT_READ_PER_MINUTE'
  | 'MAX_WAITING_JOBS_PER_WORKSPACE';

/** What `--help` says of a command; `usage` names every flag it takes. */
export interface CommandHelp {
  /** `rotate-secret --workspace ID`: the command and its flags (each `--flag` in it is one it accepts). */
  usage: string;
  /** One line, for the list of commands. */
  summary: string;
  /** What it does and what it prints, for `<command> --help`. */
  description: string;
  /** Each flag of `usage` (`--workspace ID`) and what it is. */
  options: Record<string, string>;
  /** The settings it reads besides the store's (REDIS_URL and the other REDIS_* settings, KEY_PREFIX), which every command reads. */
  settings: readonly AdminSetting[];
}

/** Read by every command: where the store is. */
const STORE_SETTINGS: readonly AdminSetting[] = ['REDIS_URL', 'KEY_PREFIX'];

/** The settings' meanings, with the defaults the config module gives them (docs/configuration.md has the whole table). */
function settingMeanings(): Record<AdminSetting, string> {
  const defaults = loadConfig({});
  const redisUrl = defaults.redis.kind === 'single' ? defaults.redis.url : '';
  return {
    REDIS_URL: `the deployment's Redis (default ${redisUrl}); with REDIS_CLUSTER_NODES, or REDIS_SENTINELS and REDIS_SENTINEL_NAME, those instead; REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS and REDIS_TLS_CA_FILE as the services read them`,
    KEY_PREFIX: `the deployment's key prefix (default ${defaults.keyPrefix})`,
    SECRETS_ENCRYPTION_KEYS:
      "the key-encryption keys the services seal signing secrets and keys with, newest first; give the CLI the services' own (unset: secrets are stored unsealed)",
    SECRET_ROTATION_OVERLAP_SECONDS: `how long the previous secret or key keeps signing after a rotation (default ${defaults.secretRotationOverlapSeconds})`,
    LINK_SIGNING_SECRET: 'when set, the download-link key is this setting rather than one stored in Redis, and there is none to reseal',
    WEBHOOK_TIMEOUT_MS: `how long a receiver has to answer; the command waits that long, plus 10 s for the dispatcher to pick the attempt up (default ${defaults.webhookTimeoutMs})`,
    RATE_LIMIT_CREATE_PER_MINUTE: `the creation limit a workspace without its own has, which "default" restores (default ${defaults.rateLimitCreatePerMinute})`,
    RATE_LIMIT_READ_PER_MINUTE: `the read limit a workspace without its own has, which "default" restores (default ${defaults.rateLimitReadPerMinute})`,
    MAX_WAITING_JOBS_PER_WORKSPACE: `the waiting-jobs limit a workspace without its own has, which "default" restores (default ${defaults.maxWaitingJobsPerWorkspace})`,
  };
}

const PROGRAM = 'npm run -s admin --';

/** How wide the help is: a terminal's 100 columns. */
const COLUMNS = 100;

/** Two columns, the second one aligned and wrapped at {@link COLUMNS}. */
function table(rows: [string, string][]): string {
  const indent = Math.max(...rows.map(([left]) => left.length)) + 5;
  const room = Math.max(COLUMNS - indent, 40);
  return rows
    .map(([left, right]) => {
      const lines = [''];
      for (const word of right.split(' ')) {
        const last = lines.length - 1;
        if (lines[last] !== '' && lines[last].length + 1 + word.length > room) lines.push(word);
        else lines[last] = lines[last] === '' ? word : `${lines[last]} ${word}`;
      }
      return lines.map((line, i) => (i === 0 ? `  ${left.padEnd(indent - 2)}${line}` : `${' '.repeat(indent)}${line}`)).join('\n');
    })
    .join('\n');
}

/** `admin --help`: every command in one line, and the settings they read. */
export function overviewHelp(commands: Record<string, CommandHelp>): string {
  const meanings = settingMeanings();
  const secretCommands = Object.entries(commands)
    .filter(([, c]) => c.settings.includes('SECRETS_ENCRYPTION_KEYS'))
    .map(([name]) => name);
  return [
    `usage: ${PROGRAM} <command> [options]`,
    `       (in a container: node tools/admin/dist/main.js <command> [options])`,
    '',
    'Administers workspaces straight in the store (Redis), past the gateway and its limits. Each',
    'command prints one JSON object on stdout. Exit code 0 when done, 2 on a usage or configuration',
    'error, 1 on any other failure (Redis out of reach, say).',
    '',
    'Commands:',
    table(Object.entries(commands).map(([name, c]) => [name, c.summary])),
    '',
    `Run "${PROGRAM} <command> --help" for a command's options and the settings it reads.`,
    '',
    'Settings (environment variables, read and checked as the services read them):',
    table([
      ['REDIS_URL', meanings.REDIS_URL],
      ['KEY_PREFIX', meanings.KEY_PREFIX],
      ['SECRETS_ENCRYPTION_KEYS', `${meanings.SECRETS_ENCRYPTION_KEYS}; read by ${secretCommands.join(', ')}`],
    ]),
    '',
    'A command refuses to run while any setting is invalid, as a service refuses to start; the whole',
    'table of settings is docs/configuration.md.',
    '',
  ].join('\n');
}

/** `admin <command> --help`: what it does, its options and every setting it reads. */
export function commandHelp(command: CommandHelp): string {
  const meanings = settingMeanings();
  const settings = [...STORE_SETTINGS, ...command.settings.filter((s) => !STORE_SETTINGS.includes(s))];
  return [
    `usage: ${PROGRAM} ${command.usage}`,
    '',
    command.description,
    '',
    'Options:',
    table([...Object.entries(command.options), ['-h, --help', 'this help']]),
    '',
    'Settings (environment variables):',
    table(settings.map((s) => [s, meanings[s]])),
    '',
  ].join('\n');
}
