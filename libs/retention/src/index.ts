export * from './media-retention';
