/**
 * `@media/callbacks`: callback administration (list, describe, manual retry, bulk recovery) and
 * the API objects of callbacks. The gateway's Callbacks API, the dashboard and the admin CLI all
 * call it; only the dispatcher makes attempts, this library queues them.
 *
 * @packageDocumentation
 */
export * from './callback-admin';
export * from './errors';
export * from './presenter';
export * from './sample-callbacks';
export * from './wiring';
