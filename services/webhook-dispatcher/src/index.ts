/**
 * `@media/webhook-dispatcher`: callback delivery. The service entry point is `main.ts`; this entry
 * exposes its parts to the tests. Other services and tools never import it: what they share about
 * callbacks (listing, describing, manual retries, recovery) is in `@media/callbacks`.
 *
 * @packageDocumentation
 */
export { createCallbackService, type CallbackServiceHandle, type WiringOverrides } from './wiring';
export { WebhookSender, type WebhookSenderOptions } from './webhook-sender';
