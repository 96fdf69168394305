export * from './config';
export * from './ids';
export * from './logger';
export * from './queue';
export * from './queues';
export * from './redis';
