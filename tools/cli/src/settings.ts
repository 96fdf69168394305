import { proxySettingsFrom, type ProxySettings } from './proxy';

/** The event types a listener can ask for with `--events` (the gateway refuses any other with a 400). */
export const EVENT_TYPES = ['video.completed', 'video.failed', 'image.completed', 'image.failed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The local stack's gateway (`npm start`), used when neither `--base-url` nor `MEDIA_BASE_URL` is given. */
export const DEFAULT_BASE_URL = 'http://localhost:8080';

/** Where the gateway serves the relay's WebSocket, below the base URL. */
export const LISTEN_PATH = '/v1/webhook-relay/listen';

/** The environment the CLI reads: the only place its values come from, so tests pass their own. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Everything `listen` needs, checked. */
export interface ListenSettings {
  /** The developer's handler every delivery is POSTed to. */
  forwardTo: URL;
  /** Event types received as they happen, besides callbacks sent to the relay URL (may be empty). */
  events: EventType[];
  /** Ask the gateway for the signing secret and print it. */
  printSecret: boolean;
  apiKey: string;
  /** The API's address (`http(s)://host[:port][/prefix]`). */
  baseUrl: URL;
  /** The proxy variables, for the connection to the gateway only. */
  proxy: ProxySettings;
}

/** A command line the CLI cannot run: printed with the usage, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** `listen`'s flags as parsed, before checking. */
export interface ListenFlags {
  'forward-to'?: string;
  events?: string;
  'print-secret'?: boolean;
  'api-key'?: string;
  'base-url'?: string;
}

/** Checks `listen`'s flags against each other and the environment; every problem is a {@link UsageError}. */
export function listenSettings(flags: ListenFlags, env: Environment): ListenSettings {
  if (flags['forward-to'] === undefined) throw new UsageError('--forward-to is required: the URL of your local handler, e.g. http://localhost:3000/webhooks');
  const forwardTo = httpUrl(flags['forward-to'], '--forward-to');
  const events = parseEvents(flags.events);
  const baseUrl = httpUrl(
    flags['base-url'] ?? (env.MEDIA_BASE_URL || DEFAULT_BASE_URL),
    flags['base-url'] === undefined && env.MEDIA_BASE_URL ? 'MEDIA_BASE_URL' : '--base-url',
  );
  const apiKey = flags['api-key'] ?? env.MEDIA_API_KEY;
  if (!apiKey) throw new UsageError('an API key is required: set MEDIA_API_KEY (or pass --api-key)');
  return { forwardTo, events, printSecret: flags['print-secret'] ?? false, apiKey, baseUrl, proxy: proxySettingsFrom(env) };
}

/** `video.completed,image.failed` into its event types, each known and named once. */
export function parseEvents(list: string | undefined): EventType[] {
  if (list === undefined) return [];
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0) throw new UsageError(`--events needs at least one event type (${EVENT_TYPES.join(', ')})`);
  const unknown = names.filter((name) => !(EVENT_TYPES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new UsageError(
      `--events: unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')} (known: ${EVENT_TYPES.join(', ')})`,
    );
  }
  return [...new Set(names as EventType[])];
}

/** The WebSocket address of the relay: the base URL's scheme made ws/wss, the path appended to its own, and the query. */
export function relayListenUrl(settings: Pick<ListenSettings, 'baseUrl' | 'events' | 'printSecret'>): URL {
  const url = new URL(settings.baseUrl.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = url.pathname.replace(/\/+$/, '') + LISTEN_PATH;
  url.search = '';
  url.hash = '';
  if (settings.events.length > 0) url.searchParams.set('events', settings.events.join(','));
  if (settings.printSecret) url.searchParams.set('reveal_secret', '1');
  return url;
}

function httpUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${what} must be an http:// or https:// URL, got "${text}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${what} must be an http:// or https:// URL, got "${text}"`);
  if (url.hostname === '') throw new UsageError(`${what} has no host: "${text}"`);
  return url;
}
