/**
 * `@media/accounts`: workspace accounts (members and passwords, dashboard sessions, API keys,
 * signing secrets) for every front end: the gateway's API-key check and dashboard, and the admin
 * CLI. Credentials are minted here and stored through `@media/storage`, as hashes where possible.
 *
 * @packageDocumentation
 */
export * from './accounts';
export * from './errors';
export * from './mint';
export * from './passwords';
export * from './permissions';
export * from './wiring';
