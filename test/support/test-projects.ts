// Which test files start processes (the Jest project `e2e`) and which run in-process (`fast`), decided
// from the sources when jest.config.ts loads, so that no list has to be kept. A test file is e2e when
// it, or a file it reaches through relative imports, imports child_process or playwright: those are
// how the suite starts a service, a redis-server, npm, openssl, ffmpeg or Chromium. Imports of
// packages (`@media/*` included) are not followed: a library that can start a process (the renderer
// runs ffmpeg for videos) does so only when a test asks for that, and a test that does so imports its
// own support for it; following them would put nearly every test in e2e. Type-only imports are not
// followed either: they load nothing.
//
// jest.config.ts loads this file with Node's own type stripping (as an ECMAScript module), and the
// tests through ts-jest (as CommonJS): hence only erasable syntax, node: imports, and the repository's
// root passed in rather than found from __dirname or import.meta.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** The folders Jest looks for tests in (jest.config.ts's `roots`). */
export const TEST_ROOTS = ['libs', 'services', 'tools', 'test'];

/** Modules whose import means the file starts processes. */
const PROCESS_STARTERS = new Set(['child_process', 'node:child_process', 'playwright', 'playwright-core', '@playwright/test']);

// `import x from '…'`, `import '…'`, `export { x } from '…'`, `export * from '…'`, spread over lines or
// not; `import type` and `export type` are left out. Statements start a line (Prettier's layout).
const STATIC_IMPORT = /^[ \t]*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s*)?['"]([^'"\n]+)['"]/gm;
// `import('…')` and `require('…')` (not `require.resolve('…')`, which loads nothing).
const DYNAMIC_IMPORT = /(?<![.\w])(?:import|require)\s*\(\s*['"]([^'"\n]+)['"]\s*\)/g;

const CODE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs'];

export interface TestProjects {
  /** Test files that run in-process (paths relative to the root, with `/`), sorted. */
  fast: string[];
  /** Test files that start processes, sorted. */
  e2e: string[];
}

/** Every `*.test.ts` under the test roots, outside node_modules, dist and dot folders (relative paths, sorted). */
export function findTestFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist' && !entry.name.startsWith('.')) walk(join(dir, entry.name));
      } else if (entry.name.endsWith('.test.ts')) {
        found.push(toPosix(relative(root, join(dir, entry.name))));
      }
    }
  };
  for (const name of TEST_ROOTS) if (existsSync(join(root, name))) walk(join(root, name));
  return found.sort();
}

/** Splits the root's test files into the two Jest projects. */
export function testProjects(root: string): TestProjects {
  const graph = new ImportGraph(root);
  const projects: TestProjects = { fast: [], e2e: [] };
  for (const file of findTestFiles(root)) projects[graph.processChain(join(root, file)) ? 'e2e' : 'fast'].push(file);
  return projects;
}

/**
 * Why a file starts processes: the chain of relative imports from it to a file that imports
 * child_process or playwright (relative paths, the file itself first), or undefined when none does.
 */
export function processChain(root: string, file: string): string[] | undefined {
  return new ImportGraph(root).processChain(resolve(root, file));
}

/** The files of one root, each read once. */
class ImportGraph {
  private readonly scanned = new Map<string, { startsProcesses: boolean; imports: string[] }>();
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  processChain(start: string): string[] | undefined {
    // Breadth first, so the chain reported is a shortest one.
    const parent = new Map<string, string | undefined>([[start, undefined]]);
    const queue = [start];
    for (let i = 0; i < queue.length; i++) {
      const file = queue[i];
      const { startsProcesses, imports } = this.scan(file);
      if (startsProcesses) {
        const chain: string[] = [];
        for (let at: string | undefined = file; at !== undefined; at = parent.get(at)) chain.unshift(toPosix(relative(this.root, at)));
        return chain;
      }
      for (const next of imports) {
        if (parent.has(next)) continue;
        parent.set(next, file);
        queue.push(next);
      }
    }
    return undefined;
  }

  private scan(file: string): { startsProcesses: boolean; imports: string[] } {
    let result = this.scanned.get(file);
    if (result) return result;
    const source = readFileSync(file, 'utf8');
    const specifiers = [...source.matchAll(STATIC_IMPORT), ...source.matchAll(DYNAMIC_IMPORT)].map((match) => match[1]);
    const imports: string[] = [];
    for (const specifier of specifiers) {
      if (!specifier.startsWith('.')) continue;
      const target = this.resolveRelative(dirname(file), specifier);
      if (target) imports.push(target);
    }
    result = { startsProcesses: specifiers.some((specifier) => PROCESS_STARTERS.has(specifier)), imports };
    this.scanned.set(file, result);
    return result;
  }

  /** The source file a relative specifier names, within the root and outside node_modules; undefined otherwise (JSON, a missing file). */
  private resolveRelative(fromDir: string, specifier: string): string | undefined {
    const base = resolve(fromDir, specifier);
    if (!base.startsWith(this.root + sep) || base.split(sep).includes('node_modules')) return undefined;
    // The services' sources name their siblings `./x.js` (ECMAScript resolution); the file is x.ts.
    const stem = base.replace(/\.[cm]?js$/, '');
    const candidates = [base, ...CODE_EXTENSIONS.map((ext) => stem + ext), ...CODE_EXTENSIONS.map((ext) => join(base, 'index' + ext))];
    return candidates.find((candidate) => CODE_EXTENSIONS.some((ext) => candidate.endsWith(ext)) && isFile(candidate));
  }
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

function toPosix(path: string): string {
  return path.split(sep).join('/');
}
