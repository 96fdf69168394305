import type { EventType, ImageRequestObject, VideoObject } from '@media/domain';
import { signatureHeaderWith, userAgent, type SigningKeys } from '@media/callback-signing';

/** The callback body (spec 2.3). */
export interface CallbackEnvelope {
  type: EventType;
  /** When the job ended, ISO 8601 UTC with milliseconds. */
  timestamp: string;
  /** The job exactly as the API's GET returns it, with links minted for this attempt. */
  data: VideoObject | ImageRequestObject;
}

/** The exact bytes of one attempt's body: what is signed is what is sent. */
export function buildBody(type: EventType, eventMs: number, data: VideoObject | ImageRequestObject): Buffer {
  const envelope: CallbackEnvelope = { type, timestamp: new Date(eventMs).toISOString(), data };
  return Buffer.from(JSON.stringify(envelope), 'utf8');
}

export interface SignedHeadersInput {
  messageId: string;
  /** This attempt's send time, Unix seconds. */
  timestampSeconds: number;
  body: Buffer;
  /**
   * The workspace's secrets, current first, then any still inside a rotation overlap (one `v1`
   * signature each), and its ed25519 secret keys likewise (one `v1a` signature each; none while
   * asymmetric signing is off), decoded for signing.
   */
  keys: SigningKeys;
  docsUrl: string;
}

/** The request headers of one attempt (spec 4.5), signed over `body` as it will be sent. */
export function buildHeaders(input: SignedHeadersInput): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': userAgent(input.docsUrl),
    'webhook-id': input.messageId,
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': signatureHeaderWith(input.keys, input.messageId, input.timestampSeconds, input.body),
  };
}
