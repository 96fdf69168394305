/**
 * SSRF guard for webhook `callback_url`s: which URLs may be called, and a DNS lookup that pins the
 * connection to the addresses that were checked.
 *
 * @packageDocumentation
 */
export { CallbackUrlRejectedError, type RejectionReason } from './errors';
export { systemResolver, type HostResolver, type ResolvedAddress } from './resolver';
export { isAllowedAddress } from './address-policy';
export { CallbackUrlGuard, type CallbackUrlPolicy, type CheckedTarget } from './guard';
export { pinnedLookup, type LookupCallback } from './pinned-lookup';
