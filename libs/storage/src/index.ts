export * from './blob-store';
export * from './callbacks';
export * from './idempotency';
export * from './jobs';
export * from './keys';
export * from './link-key';
export * from './workspaces';
export * from './record-json';
