export * from './blob-store';
export * from './create';
export * from './errors';
export * from './file-blob-store';
export * from './media-types';
