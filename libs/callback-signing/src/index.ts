/**
 * `@media/callback-signing`: signing and verification of callback deliveries in the
 * Standard Webhooks format (spec sections 4.5 and 5), shared by the sender and
 * by receivers.
 *
 * @packageDocumentation
 */
export {
  DEFAULT_TOLERANCE_SECONDS,
  SECRET_PREFIX,
  SIGNATURE_VERSION,
  generateSecret,
  sign,
  signatureHeader,
  signatureHeaderWith,
  signingKeys,
  userAgent,
  verify,
  WebhookVerificationError,
} from './webhook';
export type { HeadersLike, SigningKeys, VerifyOptions, WebhookVerificationErrorCode } from './webhook';
export { ASYMMETRIC_VERSION, PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX, generateKeyPair, publicKeyOf, signAsymmetric } from './asymmetric';
export { verifyWebhook } from './middleware';
export type { VerifyWebhookOptions, WebhookErrorResponse, WebhookSecretLookup } from './middleware';
export { createExampleReceiver } from './example-receiver';
export type { CallbackEvent, ExampleReceiverOptions } from './example-receiver';
