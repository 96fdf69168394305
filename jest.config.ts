import type { Config } from 'jest';

// got and its helpers ship as ES modules only; Jest (CommonJS) loads them through the transform.
const esmPackages = [
  'got',
  '@sindresorhus',
  '@szmarczak',
  'cacheable-lookup',
  'cacheable-request',
  'decompress-response',
  'form-data-encoder',
  'lowercase-keys',
  'mimic-response',
  'normalize-url',
  'p-cancelable',
  'responselike',
  'type-fest',
  'byte-counter',
  'chunk-data',
  'keyv',
  '@keyv',
  'char-regex',
  'uint8array-extras',
  'is-stream',
  'get-stream',
  'http-cache-semantics',
  'mimic-function',
  '@sec-ant',
  'escape-string-regexp',
  'tagged-tag',
  '@noble',
  'svix',
  'chunk-data',
];

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/tools', '<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: {
    // A dynamic import() in the services' CommonJS output is resolved as ECMAScript, which wants the
    // file's extension; here the sources are what it names.
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^@media/(api-gateway|generator|webhook-dispatcher)$': '<rootDir>/services/$1/src',
    '^@media/([a-z-]+)$': '<rootDir>/libs/$1/src',
  },
  transform: {
    '^.+\\.[cm]?[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
};

export default config;
