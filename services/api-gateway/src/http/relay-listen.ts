import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { WorkspaceAccounts } from '@media/accounts';
import {
  parseResultFrame,
  RELAY_LISTEN_PATH,
  type DeliveryFrame,
  type ReadyFrame,
  type RelayDirectory,
  type RelayHub,
  type RelayListenerRecord,
  type RelaySession,
} from '@media/callbacks';
import type { Logger } from '@media/common';
import { EVENT_TYPES, newId, type EventType } from '@media/domain';
import { ApiError } from './api-error';
import { refuseUpgrade } from './api-server';
import type { FailedAuthThrottle } from './auth-throttle';

/** How often the gateway pings a listener; one that has not answered the previous ping by then is cut. */
const PING_MS = 20_000;
/** Largest frame a listener may send (a result: an excerpt of 1 KiB and a few numbers). */
const MAX_FRAME_BYTES = 64 * 1024;

export interface RelayListenDeps {
  hub: RelayHub;
  directory: RelayDirectory;
  accounts: Pick<WorkspaceAccounts, 'identifyApiKey' | 'secrets'>;
  logger: Logger;
  /** WEBHOOK_TIMEOUT_MS: what a listener's local handler has. */
  timeoutMs: number;
  /** The API's failed-authentication throttle: a wrong key on the relay counts as one on the API. */
  throttle?: Pick<FailedAuthThrottle, 'check' | 'failed'>;
  /** The client's address as the API sees it (TRUST_PROXY's proxies stripped), which the throttle counts by. */
  clientAddress: (req: IncomingMessage) => string;
}

/**
 * A listener's key still authenticates it as the same key (read through the accounts' short cache:
 * a revoked key ends its sessions within a refresh and that cache).
 */
export function relayKeyCheck(accounts: Pick<WorkspaceAccounts, 'identifyApiKey'>): (session: RelaySession) => Promise<boolean> {
  return async (session) => (await accounts.identifyApiKey(session.apiKey))?.keyId === session.record.key_id;
}

/** One `media-callbacks listen` connection. Frames sent before the socket is open wait for it. */
class WebSocketSession implements RelaySession {
  private socket: WebSocket | undefined;
  private readonly waiting: string[] = [];

  constructor(
    readonly record: RelayListenerRecord,
    /** The key it connected with, to check it still authenticates (kept in memory only). */
    readonly apiKey: string,
  ) {}

  get attached(): boolean {
    return this.socket !== undefined;
  }

  attach(socket: WebSocket): void {
    this.socket = socket;
    for (const frame of this.waiting.splice(0)) socket.send(frame);
  }

  sendText(text: string): void {
    if (this.socket) this.socket.send(text);
    else this.waiting.push(text);
  }

  send(frame: DeliveryFrame): void {
    this.sendText(JSON.stringify(frame));
  }

  close(code: number, reason: string): void {
    this.socket?.close(code, reason);
  }
}

/**
 * `GET /v1/webhook-relay/listen`: the client CLI's WebSocket. The upgrade is answered only once the
 * key, the events and the workspace's place for one more listener are settled, so every refusal
 * is an ordinary HTTP answer in the API's error shape (401, 400, 429) that any client can read.
 */
export function relayListenUpgrade(deps: RelayListenDeps): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const server = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
  return (req, socket, head) => {
    void accept(req, socket, head).catch((err: unknown) => {
      const error = err instanceof ApiError ? err : ApiError.unavailable();
      if (!(err instanceof ApiError)) deps.logger.warn('relay listener not accepted', { error: String(err) });
      refuseUpgrade(socket, error, deps.logger, 'relay listen refused');
    });
  };

  async function accept(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname !== RELAY_LISTEN_PATH) throw ApiError.notFound('Unknown WebSocket path; the relay listens at /v1/webhook-relay/listen.');
    const address = deps.clientAddress(req);
    deps.throttle?.check(address);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match) {
      await deps.throttle?.failed(address);
      throw new ApiError(401, 'authentication_error', 'Missing API key. Send it as "Authorization: Bearer <API_KEY>".', null, 'missing_api_key');
    }
    const apiKey = match[1]!;
    const identity = await deps.accounts.identifyApiKey(apiKey);
    if (!identity) {
      await deps.throttle?.failed(address);
      throw new ApiError(401, 'authentication_error', 'Incorrect API key provided.', null, 'invalid_api_key');
    }
    const events = parseEvents(url.searchParams.get('events'));
    const now = Date.now();
    const record: RelayListenerRecord = {
      session_id: newId('rls'),
      workspace_id: identity.workspaceId,
      key_id: identity.keyId,
      events,
      since_ms: now,
      seen_ms: now,
      gateway_id: deps.hub.gatewayId,
    };
    const relayUrl = await deps.directory.relayUrl(identity.workspaceId);
    const secret = url.searchParams.get('reveal_secret') === '1' ? (await deps.accounts.secrets(identity.workspaceId)).current.secret : undefined;
    const session = new WebSocketSession(record, apiKey);
    if (!(await deps.hub.register(session))) {
      const refused = ApiError.rateLimited(
        'This workspace has 5 media-callbacks listeners connected already; stop one, or wait for one that was cut off to lapse.',
        'too_many_listeners',
        5,
      );
      throw refused;
    }
    // Registered before the upgrade so that a full workspace is refused with an ordinary 429; a
    // handshake that then fails (the socket went, or ws refused the request) gives the place back.
    if (socket.destroyed) {
      await deps.hub.unregister(record.session_id);
      return;
    }
    socket.once('close', () => {
      if (!session.attached) void deps.hub.unregister(record.session_id);
    });
    server.handleUpgrade(req, socket, head, (ws) => {
      const ready: ReadyFrame = {
        type: 'ready',
        session_id: record.session_id,
        workspace_id: record.workspace_id,
        relay_url: relayUrl,
        events,
        timeout_ms: deps.timeoutMs,
        ...(secret ? { signing_secret: secret } : {}),
      };
      ws.send(JSON.stringify(ready));
      session.attach(ws);
      deps.logger.info('relay listener connected', { workspace_id: record.workspace_id, session_id: record.session_id, key_id: record.key_id, events });
      let answered = true;
      const pinger = setInterval(() => {
        if (!answered) return ws.terminate();
        answered = false;
        ws.ping();
      }, PING_MS);
      pinger.unref();
      ws.on('pong', () => (answered = true));
      ws.on('message', (data, isBinary) => {
        const result = isBinary ? undefined : parseResultFrame(data.toString());
        if (result) void deps.hub.onResult(record.session_id, result);
      });
      ws.on('error', () => ws.terminate());
      ws.once('close', (code) => {
        clearInterval(pinger);
        void deps.hub.unregister(record.session_id);
        deps.logger.info('relay listener disconnected', { workspace_id: record.workspace_id, session_id: record.session_id, code });
      });
    });
  }
}

function parseEvents(text: string | null): EventType[] {
  if (text === null || text === '') return [];
  const names = text.split(',').map((name) => name.trim());
  const unknown = names.find((name) => !(EVENT_TYPES as readonly string[]).includes(name));
  if (unknown !== undefined)
    throw ApiError.invalid(`Unknown event type '${unknown}'; the event types are ${EVENT_TYPES.join(', ')}.`, 'events', 'invalid_value');
  return EVENT_TYPES.filter((type) => names.includes(type));
}
