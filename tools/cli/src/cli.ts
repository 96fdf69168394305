import { parseArgs } from 'node:util';
import { DEFAULT_BASE_URL, EVENT_TYPES, listenSettings, UsageError, type Environment, type ListenFlags, type ListenSettings } from './settings';

export const PROGRAM = 'media-callbacks';

/** What a command line asks for. */
export type Command =
  /** Print `text` on stdout, exit 0. */
  | { kind: 'help'; text: string }
  /** Print `message` and `usage` (the synopsis, not the whole help) on stderr, exit 2. */
  | { kind: 'usage-error'; message: string; usage: string }
  | { kind: 'listen'; settings: ListenSettings };

const LISTEN_OPTIONS = {
  'forward-to': { type: 'string' },
  events: { type: 'string' },
  'print-secret': { type: 'boolean' },
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Reads the command line (without `node` and the script) against the environment. */
export function parseCommandLine(argv: readonly string[], env: Environment): Command {
  const [command, ...rest] = argv;
  if (command === undefined) return { kind: 'usage-error', message: 'a command is needed', usage: OVERVIEW_HELP };
  if (command === '--help' || command === '-h') {
    return rest.length === 0 ? { kind: 'help', text: OVERVIEW_HELP } : { kind: 'usage-error', message: `unexpected ${rest[0]}`, usage: OVERVIEW_HELP };
  }
  if (command === 'help') {
    if (rest.length === 0) return { kind: 'help', text: OVERVIEW_HELP };
    if (rest.length === 1 && rest[0] === 'listen') return { kind: 'help', text: LISTEN_HELP };
    return { kind: 'usage-error', message: `no help for "${rest.join(' ')}": the commands are listen and help`, usage: OVERVIEW_HELP };
  }
  if (command === 'listen') return parseListen(rest, env);
  if (command.startsWith('-')) return { kind: 'usage-error', message: `unknown option ${command}`, usage: OVERVIEW_HELP };
  return { kind: 'usage-error', message: `unknown command "${command}"`, usage: OVERVIEW_HELP };
}

function parseListen(args: string[], env: Environment): Command {
  let values: ListenFlags & { help?: boolean };
  try {
    ({ values } = parseArgs({ args, options: LISTEN_OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    // parseArgs's messages name the option and end with advice on `--`, which does not apply here.
    const message = (err as Error).message.replace(/\. To specify .*$/s, '').replace(/^Unknown option '([^']+)'.*$/s, 'unknown option $1');
    return { kind: 'usage-error', message, usage: LISTEN_USAGE };
  }
  if (values.help) return { kind: 'help', text: LISTEN_HELP };
  try {
    return { kind: 'listen', settings: listenSettings(values, env) };
  } catch (err) {
    if (err instanceof UsageError) return { kind: 'usage-error', message: err.message, usage: LISTEN_USAGE };
    throw err;
  }
}

export const OVERVIEW_HELP = `Usage: ${PROGRAM} <command> [options]

Forwards your workspace's callbacks (signed webhooks) to a handler on your machine, through one
outbound WebSocket to the API's gateway: no public address, tunnel or open port needed.

Commands:
  listen     forward callbacks to a local handler: ${PROGRAM} listen --forward-to URL
  help       this help; "help listen" for the command's

Options:
  -h, --help    this help (after a command: that command's)

Environment:
  MEDIA_API_KEY     the API key the gateway knows your workspace by
  MEDIA_BASE_URL    the API's address (default ${DEFAULT_BASE_URL}, the local stack)

Example:
  export MEDIA_API_KEY=sk_...
  npx ${PROGRAM} listen --forward-to http://localhost:3000/webhooks
`;

const LISTEN_SYNOPSIS = `Usage: ${PROGRAM} listen --forward-to URL [--events LIST] [--print-secret]
                              [--api-key KEY] [--base-url URL]`;

/** What a wrong `listen` command line is answered with, below the error. */
export const LISTEN_USAGE = `${LISTEN_SYNOPSIS}
Run "${PROGRAM} listen --help" for what each option does.
`;

export const LISTEN_HELP = `${LISTEN_SYNOPSIS}

Opens one authenticated WebSocket to the API's gateway and forwards your workspace's callbacks to a
handler on this machine. Each delivery is POSTed to --forward-to with the body and the signed
webhook-* headers exactly as the service sent them (verify them as in production); the handler's
answer (its status, the first 1 KiB of its body, timings) goes back to the service as the attempt's
record, so a 2xx delivers the callback and anything else leaves it to the retry schedule.

Callbacks come here when a job's callback_url is the workspace's relay URL (printed once connected,
the same every time) and, with --events, at every job end of those types, as to a workspace
endpoint. One line is printed per delivery: time, event type, webhook id, status or error, duration.
A dropped connection is opened again with backoff; Ctrl-C (SIGINT) or SIGTERM closes it and exits.

Options:
  --forward-to URL   your handler, http:// or https:// (required), e.g.
                     http://localhost:3000/webhooks; reached directly, never through a proxy
  --events LIST      comma list of event types to receive as they happen, without a callback_url:
                     ${EVENT_TYPES.join(', ')}
  --print-secret     print the workspace's signing secret (whsec_...) on a line of its own once
                     connected, to verify the signatures with
  --api-key KEY      the API key (default MEDIA_API_KEY; prefer the variable, since other users of
                     this machine can read a command line); never printed
  --base-url URL     the API's address (default MEDIA_BASE_URL, else ${DEFAULT_BASE_URL})
  -h, --help         this help

Environment:
  MEDIA_API_KEY        the API key, when --api-key is not given
  MEDIA_BASE_URL       the API's address, when --base-url is not given
  HTTPS_PROXY          an HTTP proxy, http://[user:pass@]host:port, that the connection to an https
                       gateway goes through (a CONNECT tunnel); https_proxy is read first
  HTTP_PROXY           the same for an http gateway; http_proxy is read first
  NO_PROXY             gateways reached directly: comma list of host names (each covers its
                       subdomains), IP addresses, CIDR blocks, host:port, or *
  NODE_EXTRA_CA_CERTS  a PEM file of extra CAs to trust (a gateway or handler with a private CA)

Exit status: 0 when stopped by a signal; 1 when the API key is refused or revoked, or the address
answers as no gateway would; 2 on a usage error or a request the gateway refuses (400).

Example:
  export MEDIA_API_KEY=sk_...
  npx ${PROGRAM} listen --forward-to http://localhost:3000/webhooks \\
    --events video.completed,video.failed
`;
