export * from './blob-store';
export * from './idempotency';
export * from './jobs';
export * from './keys';
export * from './link-key';
export * from './workspaces';
