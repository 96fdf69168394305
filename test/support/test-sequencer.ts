// The order Jest starts test files in. Jest's own sequencer runs the files that took longest last
// time first (from its cache), so that no long file starts near the end while the other workers sit
// idle; without that cache, as in a fresh clone, it goes by file size, which here says little: the
// longest files (the isolation and failover suites, a minute or more of waiting each) are of middling
// size. So a file Jest has no time for is given an estimate instead: the longest timeout its tests
// declare, which is how long its author expected the slowest of them might take, scaled to the
// times the cache holds.
//
// Loaded by Jest itself (testSequencer), not through the transform: with Node's type stripping, as
// an ECMAScript module (as jest.config.ts is), hence only erasable syntax. Jest require()s it, which
// hands over the module's `module.exports` export.
import { readFileSync } from 'node:fs';
import TestSequencer from '@jest/test-sequencer';

type Test = Parameters<TestSequencer['sort']>[0][number];

/** How Jest's cache marks a file whose last run failed. */
const JEST_FAILED = 0;

/** A declared timeout is several times what its test takes when all goes well. */
const DECLARED_PER_TAKEN = 5;

/** `60_000`-style literals of a file: the timeouts its tests, hooks and waits declare, in ms. */
const TIMEOUT_LITERAL = /\b(\d+)_000\b/g;

/** The longest timeout a test file declares, in ms; 0 when it declares none. */
export function longestDeclaredTimeoutMs(source: string): number {
  let longest = 0;
  for (const match of source.matchAll(TIMEOUT_LITERAL)) longest = Math.max(longest, Number(match[1]) * 1_000);
  return longest;
}

class EstimatingSequencer extends TestSequencer {
  override async sort(tests: Test[]): Promise<Test[]> {
    // Jest's order: the files that failed last time first, then the longest; it also sets each
    // file's `duration` from its cache (undefined where there is none).
    const sorted = await super.sort(tests);
    const failed = (test: Test) => this._getCache(test)[test.path]?.[0] === JEST_FAILED;
    for (const test of sorted) test.duration ??= longestDeclaredTimeoutMs(readFileSync(test.path, 'utf8')) / DECLARED_PER_TAKEN;
    return sorted.sort((a, b) => (failed(a) !== failed(b) ? (failed(a) ? -1 : 1) : b.duration! - a.duration!));
  }
}

export { EstimatingSequencer as 'module.exports' };
