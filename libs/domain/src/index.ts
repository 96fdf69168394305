export * from './ids';
export * from './jobs';
export * from './links';
export * from './models';
export * from './presenter';
export * from './callbacks';
