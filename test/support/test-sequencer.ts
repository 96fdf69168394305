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

/**
 * The timeouts a file's tests and hooks declare: `jest.setTimeout(180_000)`, and the literal that
 * closes a test's or hook's call after its function, `}, 300_000);` as Prettier lays it out (not a
 * wait's own bound, such as `eventually(…, 30_000, 'what')`, nor other durations the file uses).
 */
const DECLARED_TIMEOUT = /(?:\}\s*,|jest\.setTimeout\()\s*(\d+)_000\s*\)/g;

/** The longest timeout a test file declares, in ms; 0 when it declares none. */
export function longestDeclaredTimeoutMs(source: string): number {
  let longest = 0;
  for (const match of source.matchAll(DECLARED_TIMEOUT)) longest = Math.max(longest, Number(match[1]) * 1_000);
  return longest;
}

class EstimatingSequencer extends TestSequencer {
  override async sort(tests: Test[]): Promise<Test[]> {
    // Jest's order: the files that failed last time first, then the longest, then (without times)
    // the largest; it also sets each file's `duration` from its cache (undefined where there is none).
    // The sort below is stable, so files with the same estimate keep that order.
    const sorted = await super.sort(tests);
    const failed = (test: Test) => this._getCache(test)[test.path]?.[0] === JEST_FAILED;
    for (const test of sorted) test.duration ??= longestDeclaredTimeoutMs(readFileSync(test.path, 'utf8')) / DECLARED_PER_TAKEN;
    return sorted.sort((a, b) => (failed(a) !== failed(b) ? (failed(a) ? -1 : 1) : b.duration! - a.duration!));
  }
}

export { EstimatingSequencer as 'module.exports' };
