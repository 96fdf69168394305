/**
 * `@media/accounts`: workspace accounts (members and passwords, dashboard sessions, API keys,
 * signing secrets) for every front end: the gateway's API-key check and dashboard, the dispatcher's
 * signing, and the admin CLI. Credentials are minted here and stored by its stores
 * (workspace-store, session-store, lua/), as hashes where possible and sealed where they must be used.
 *
 * @packageDocumentation
 */
export * from './accounts';
export * from './audit';
export * from './errors';
export * from './mint';
export * from './passwords';
export * from './permissions';
export * from './workspace-store';
export * from './session-store';
export * from './wiring';
