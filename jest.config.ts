import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import type { Config } from 'jest';

// Node loads this file itself (type stripping), as an ECMAScript module: no __dirname. It requires
// test-projects.ts rather than importing it, since an import of a .ts file in a package without a
// "type" makes Node print a warning on every run.
const { testProjects } = createRequire(import.meta.url)('./test/support/test-projects.ts') as typeof import('./test/support/test-projects');

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

// Two projects: `fast` runs in-process against the one Redis at REDIS_URL, `e2e` starts processes
// (the built services, private redis-servers, Sentinels, clusters, npm, openssl, ffmpeg, Chromium).
// Which is which is read from the tests' imports each time this file loads (test-projects.ts), so
// there is no list to keep. `npx jest` runs both; `--selectProjects fast` (npm run test:fast) one.
const { e2e } = testProjects(import.meta.dirname);

// What both projects share: every option Jest takes per project.
const project: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/tools', '<rootDir>/test'],
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
  // Run once however many projects name it (it builds what the e2e tests start).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
};

const config: Config = {
  projects: [
    // Every test file not in e2e, so that a file is in exactly one project.
    {
      ...project,
      displayName: 'fast',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...e2e.map((file) => `^<rootDir>/${escapeRegExp(file)}$`)],
    },
    { ...project, displayName: 'e2e', testMatch: e2e.map((file) => `<rootDir>/${file}`) },
  ],
  // Options of the whole run, which Jest reads only here.
  testTimeout: 60_000,
  // Two workers per core. With one, most of a run is waiting (attempt timeouts, ladder gaps, Sentinel
  // promotions, retention periods), not CPU: on this 2-core machine the suite took 588 s with two
  // workers, the machine 53 % busy, and 353 s with four, 75 % busy. Five took 343 s: past four the
  // run is bound by CPU, and a busier machine only slows the suites that wait. The suites that judge
  // latency compare it with a control run measured at the same moment (test/isolation/support.ts),
  // so a fuller machine is not what fails them.
  maxWorkers: 2 * availableParallelism(),
  // Longest first, estimated from the declared timeouts where Jest has no time of its own yet.
  testSequencer: '<rootDir>/test/support/test-sequencer.ts',
};

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export default config;
