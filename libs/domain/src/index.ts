export * from './ids';
export * from './jobs';
export * from './callbacks';
export * from './retry-ladder';
export * from './links';
export * from './models';
export * from './presenter';
export * from './destinations';
