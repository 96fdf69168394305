import type { ParameterObject, PathItemObject } from 'openapi3-ts/oas31';
import { EVENT_TYPES, type EventType, LADDER_ATTEMPTS, type RetrySchedule } from '@media/domain';
import { ASYMMETRIC_VERSION, DEFAULT_TOLERANCE_SECONDS, PUBLIC_KEY_PREFIX, SECRET_PREFIX, SIGNATURE_VERSION, userAgent } from '@media/callback-signing';
import { humanDuration, ref } from './schema-kit';
import { eventSchemaName } from './schemas';

export interface WebhookSettings {
  docsUrl: string;
  webhookTimeoutMs: number;
  webhookRetryScheduleMs: RetrySchedule;
  secretRotationOverlapSeconds: number;
  linkTtlSeconds: number;
}

const WHEN: Record<EventType, string> = {
  'video.completed': 'A video is ready: `data.url` downloads it. The job is charged.',
  'video.failed': 'A video could not be made: `data.error` says why. Not charged.',
  'image.completed': 'An image request (generation or edit) is done: `data.data` has a link per image. Charged.',
  'image.failed': 'No image was made: `data.error` says why. Not charged.',
};

const base64 = '[A-Za-z0-9+/]+={0,2}';
const signatureEntry = `(${SIGNATURE_VERSION}|${ASYMMETRIC_VERSION}),${base64}`;

function headers(settings: WebhookSettings): ParameterObject[] {
  const overlap = humanDuration(settings.secretRotationOverlapSeconds * 1000);
  return [
    {
      name: 'webhook-id',
      in: 'header',
      required: true,
      description: "The callback's `msg_` id: the same on every attempt, automatic or manual. De-duplicate on it: delivery is at least once.",
      schema: { type: 'string', pattern: '^msg_[0-9a-z]+$' },
    },
    {
      name: 'webhook-timestamp',
      in: 'header',
      required: true,
      description: `When this attempt was sent (Unix seconds), fresh on every attempt. Reject a delivery more than ${DEFAULT_TOLERANCE_SECONDS} s from your clock either way.`,
      schema: { type: 'string', pattern: '^(0|[1-9][0-9]*)$' },
    },
    {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      description: `Space-separated \`${SIGNATURE_VERSION},<base64>\` entries: one per signing secret in use, so two (the new secret first) during the ${overlap} after a secret rotation. Accept the delivery when any \`${SIGNATURE_VERSION}\` entry matches. A workspace that signs asymmetrically adds a \`${ASYMMETRIC_VERSION},<base64>\` entry (ed25519) per signing key pair in use, after the \`${SIGNATURE_VERSION}\` entries: two during the ${overlap} after a key rotation.`,
      schema: { type: 'string', pattern: `^${signatureEntry}( ${signatureEntry})*$` },
    },
    {
      name: 'user-agent',
      in: 'header',
      required: true,
      description: 'Who is calling, and where these pages are.',
      schema: { type: 'string', pattern: '^Service-Webhooks/1\\.0 \\(\\+\\S+/webhooks\\)$', examples: [userAgent(settings.docsUrl)] },
    },
  ];
}

/** The signing rule and the retry ladder, as this deployment runs them. */
export function webhooksDescription(settings: WebhookSettings): string {
  let elapsed = 0;
  const ladder = [
    '| Attempt | Sent | After the job ended |',
    '| --- | --- | --- |',
    '| 1 | as soon as the job ends | 0 |',
    ...settings.webhookRetryScheduleMs.map((gap, i) => {
      elapsed += gap;
      return `| ${i + 2} | ${humanDuration(gap)} after attempt ${i + 1} | ${humanDuration(elapsed)} or later |`;
    }),
  ];
  return [
    `A job created with \`callback_url\` is reported there once it ends: one POST per event, body \`{type, timestamp, data}\` as JSON (\`content-type: application/json\`), \`data\` being the job as the API shows it with links valid ${humanDuration(settings.linkTtlSeconds * 1000)} from the attempt, never past the job's removal (always links, never base64).`,
    '',
    `**Signing** ([Standard Webhooks](https://www.standardwebhooks.com/)): each \`${SIGNATURE_VERSION}\` entry of \`webhook-signature\` is the base64 of HMAC-SHA256 over \`<webhook-id>.<webhook-timestamp>.<raw body>\`, keyed with the base64-decoded part of the workspace signing secret after \`${SECRET_PREFIX}\`. Verify the raw bytes (re-serialised JSON changes them), compare in constant time, and reject a \`webhook-timestamp\` more than ${DEFAULT_TOLERANCE_SECONDS} s away from now.`,
    '',
    `**Asymmetric signing** (opt-in per workspace): deliveries also carry \`${ASYMMETRIC_VERSION}\` entries, each the base64 of an ed25519 signature over the same \`<webhook-id>.<webhook-timestamp>.<raw body>\`, verified with a public key \`${PUBLIC_KEY_PREFIX}<base64 of the 32-byte key>\` from \`GET /v1/webhook-keys/{workspace_id}\` (no API key): a receiver that holds it cannot sign.`,
    '',
    `**Answer** with any 2xx within ${humanDuration(settings.webhookTimeoutMs)}; redirects are not followed. Anything else (another status, a redirect, no answer in time, no connection) is a failed attempt, and the next one follows this ladder; after attempt ${LADDER_ATTEMPTS} the callback is \`failed\`. A manual retry (\`POST /v1/callbacks/{id}/retry\`) sends it again, with the same \`webhook-id\`, for as long as the callback and its job are kept.`,
    '',
    ...ladder,
  ].join('\n');
}

/** One item per event, each with the rules in short; the `Webhooks` tag's description has them in full. */
export function webhookItems(settings: WebhookSettings): Record<string, PathItemObject> {
  const gaps = settings.webhookRetryScheduleMs.map(humanDuration).join(', ');
  const rules = `Signed per Standard Webhooks: HMAC-SHA256 over \`<webhook-id>.<webhook-timestamp>.<raw body>\` with the workspace's \`${SECRET_PREFIX}\` secret; reject timestamps more than ${DEFAULT_TOLERANCE_SECONDS} s off. Answer 2xx within ${humanDuration(settings.webhookTimeoutMs)}; otherwise it is sent again after ${gaps} (${LADDER_ATTEMPTS} attempts in all). In full under the \`Webhooks\` tag.`;
  return Object.fromEntries(
    EVENT_TYPES.map((type): [string, PathItemObject] => [
      type,
      {
        post: {
          tags: ['Webhooks'],
          summary: `${type} callback`,
          description: `${WHEN[type]}\n\n${rules}`,
          operationId: `${type.replace('.', '_')}_webhook`,
          security: [],
          parameters: headers(settings),
          requestBody: { required: true, content: { 'application/json': { schema: ref(eventSchemaName(type)) } } },
          responses: {
            '2XX': { description: 'Delivered: no further automatic attempt is made.' },
            default: { description: 'A failed attempt: the next one follows the retry ladder.' },
          },
        },
      },
    ]),
  );
}
