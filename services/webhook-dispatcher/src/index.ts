/**
 * `@media/webhook-dispatcher`: callback delivery. The service entry point is `main.ts`; this entry
 * exposes the service for other processes that act on callbacks (admin CLI, dashboard).
 *
 * @packageDocumentation
 */
export { CallbackService, callbackIdFor, type CallbackServiceDeps, type DeliveryRequest, type ManualRetryRequest } from './callback-service';
export { CallbackNotFoundError, UndeliverableCallbackError } from './errors';
export { createCallbackService, type CallbackServiceHandle, type WiringOverrides } from './wiring';
export { WebhookSender, type Exchange, type WebhookSenderOptions } from './webhook-sender';
