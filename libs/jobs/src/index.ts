/**
 * `@media/jobs`: a job from its admission to its charge. Admission and the limits on it (limits,
 * idempotency), the job store and its Lua scripts (job-store, lua/job-*), and the charge: what a
 * finished job costs (charging) and the one Redis step that marks it completed and writes its
 * ledger entry (job-finish.lua through JobRepository.finish).
 *
 * @packageDocumentation
 */
export * from './job-store';
export * from './idempotency';
export * from './limits';
export * from './charging';
