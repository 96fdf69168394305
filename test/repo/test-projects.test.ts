// jest.config.ts splits the tests into two projects with test/support/test-projects.ts: `fast` (in
// process) and `e2e` (starts processes). Every test file must land in exactly one, the ones that
// start processes in e2e, and a file that reaches no process start in fast.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { findTestFiles, processChain, testProjects } from '../support/test-projects';

const ROOT = resolve(__dirname, '../..');

/** Every *.test.ts in the repository outside node_modules, dist and dot folders, found without the module under test. */
function everyTestFile(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      if (entry.isDirectory()) return /^(node_modules|dist|\..*)$/.test(entry.name) ? [] : everyTestFile(join(dir, entry.name));
      return entry.name.endsWith('.test.ts') ? [relative(ROOT, join(dir, entry.name)).split(sep).join('/')] : [];
    })
    .sort();
}

describe('the repository', () => {
  const projects = testProjects(ROOT);

  it('has every test file in exactly one project', () => {
    expect(projects.fast.filter((file) => projects.e2e.includes(file))).toEqual([]);
    expect([...projects.fast, ...projects.e2e].sort()).toEqual(everyTestFile());
    expect(projects.fast.length).toBeGreaterThan(0);
    expect(projects.e2e.length).toBeGreaterThan(0);
  });

  it.each(['test/resilience/sentinel-failover.test.ts', 'test/gateway/api.test.ts', 'test/dashboard/browser.test.ts', 'test/readme/readme.test.ts'])(
    'puts %s, which starts processes, in e2e',
    (file) => {
      expect(projects.e2e).toContain(file);
      expect(processChain(ROOT, file)?.[0]).toBe(file);
    },
  );

  it.each([
    'libs/callbacks/src/retry-ladder.test.ts',
    'test/repo/config-contract.test.ts',
    'test/ops/ops-origin-and-host.test.ts',
    'test/repo/test-projects.test.ts',
  ])('puts %s, which runs in-process, in fast', (file) => {
    expect(projects.fast).toContain(file);
    expect(processChain(ROOT, file)).toBeUndefined();
  });
});

describe('the rule', () => {
  let root: string;
  const write = (path: string, source: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  };
  const chain = (file: string) => processChain(root, file);

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'test-projects-'));
    write('test/support/spawner.ts', "import { spawn } from 'node:child_process';\nexport const run = () => spawn('true');\n");
    write('test/support/browser.ts', "import { chromium } from 'playwright-core';\nexport const open = () => chromium.launch();\n");
    write(
      'test/support/quiet.ts',
      "import { readFileSync } from 'node:fs';\nimport { Redis } from 'ioredis';\nexport const quiet = { readFileSync, Redis };\n",
    );
    write('test/support/cycle-a.ts', "import { b } from './cycle-b';\nexport const a = () => b;\n");
    write('test/support/cycle-b.ts', "import { a } from './cycle-a';\nexport const b = () => a;\n");
    write('libs/tools/src/index.ts', "export { execFileSync } from 'node:child_process';\n");

    write(
      'test/plain.test.ts',
      "import { quiet } from './support/quiet';\nimport { a } from './support/cycle-a';\nit('runs', () => expect([quiet, a]).toBeTruthy());\n",
    );
    write(
      'test/types-only.test.ts',
      "import type { ChildProcess } from 'node:child_process';\nimport type { run } from './support/spawner';\nexport type { open } from './support/browser';\nlet child: ChildProcess | undefined;\nlet r: typeof run | undefined;\n",
    );
    write('test/package.test.ts', "import { execFileSync } from '@media/tools';\nexport const x = execFileSync;\n");
    write('test/deep.test.ts', "import { hop } from './hops/hop.js';\nexport const x = hop;\n");
    write('test/hops/hop.ts', "import {\n  run,\n} from '../support/spawner';\nexport const hop = run;\n");
    write('test/dynamic.test.ts', "it('opens', async () => {\n  const { open } = await import('./support/browser');\n  await open();\n});\n");
    write('test/required.test.ts', "const { run } = require('./support/spawner');\nexport const x = run;\n");
    write('test/direct.test.ts', "import { execSync } from 'child_process';\nexport const x = execSync;\n");
    write('test/node_modules/ignored.test.ts', '');
    write('libs/tools/dist/ignored.test.ts', '');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds test files outside node_modules and dist', () => {
    expect(findTestFiles(root)).toEqual(['deep', 'direct', 'dynamic', 'package', 'plain', 'required', 'types-only'].map((name) => `test/${name}.test.ts`));
  });

  it('puts a file that imports nothing that starts processes in fast, cycles and all', () => {
    expect(chain('test/plain.test.ts')).toBeUndefined();
  });

  it('does not follow type-only imports, nor packages', () => {
    expect(chain('test/types-only.test.ts')).toBeUndefined();
    expect(chain('test/package.test.ts')).toBeUndefined();
  });

  it('follows relative imports of every form to child_process or playwright', () => {
    expect(chain('test/deep.test.ts')).toEqual(['test/deep.test.ts', 'test/hops/hop.ts', 'test/support/spawner.ts']);
    expect(chain('test/dynamic.test.ts')).toEqual(['test/dynamic.test.ts', 'test/support/browser.ts']);
    expect(chain('test/required.test.ts')).toEqual(['test/required.test.ts', 'test/support/spawner.ts']);
    expect(chain('test/direct.test.ts')).toEqual(['test/direct.test.ts']);
  });

  it('splits the test files by that', () => {
    expect(testProjects(root)).toEqual({
      fast: ['test/package.test.ts', 'test/plain.test.ts', 'test/types-only.test.ts'],
      e2e: ['test/deep.test.ts', 'test/direct.test.ts', 'test/dynamic.test.ts', 'test/required.test.ts'],
    });
  });
});
