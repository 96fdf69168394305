/**
 * `@media/callbacks`: everything about a callback, from the job's end to its last attempt: the
 * retry ladder (retry-ladder; its shape and the records are @media/domain's callbacks.ts), the
 * per-destination caps and slow lanes (destination-policy for the rules, destination-slots and lua/destination-* for their
 * enforcement), the delivery of one attempt and what follows it (callback-service: record, schedule
 * the next step, give up after the last), what a receiver's answer means (classify, retry-after),
 * the signed body and headers (envelope), the store and its Lua scripts (callback-store, lua/), and
 * the operator's commands (callback-admin: list, describe, manual retry, bulk recovery) with the
 * API objects (presenter). The dispatcher service wires it to the HTTP sender and its queues.
 *
 * @packageDocumentation
 */
export * from './retry-ladder';
export * from './retry-after';
export * from './destination-policy';
export * from './destination-slots';
export * from './callback-store';
export * from './endpoints';
export * from './endpoint-store';
export * from './webhook-endpoints';
export * from './relay';
export * from './relay-protocol';
export * from './classify';
export * from './envelope';
export * from './exchange';
export * from './callback-service';
export * from './sample-callback-store';
export * from './sample-callback-service';
export * from './callback-admin';
export * from './errors';
export * from './presenter';
export * from './sample-callbacks';
export * from './wiring';
