// Lua has one home and one way to run: `.lua` files in a package's lua/ folder, each headed by what
// it does, its KEYS, ARGV and answers (BullMQ's src/commands/ convention), loaded by LuaScript.load
// and run by LuaScript.run (EVALSHA, EVAL once on NOSCRIPT). A script written inline in TypeScript,
// or run with a bare EVAL, has no header to read and no file a newcomer finds; these checks keep
// it from coming back.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const PACKAGES = ['libs', 'services', 'tools'].flatMap((top) =>
  readdirSync(join(ROOT, top), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(ROOT, top, e.name)),
);
/** The one class that talks EVALSHA/EVAL to Redis. */
const SCRIPT_CLASS = 'libs/common/src/lua-script.ts';

function filesUnder(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return filesUnder(path, suffix);
    return name.endsWith(suffix) ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path);
const sources = PACKAGES.flatMap((dir) => filesUnder(dir, '.ts'));

describe('Lua in TypeScript', () => {
  it('finds the sources it scans', () => {
    expect(sources.map(rel)).toContain(SCRIPT_CLASS);
    expect(sources.length).toBeGreaterThan(100);
  });

  it.each([
    ['a bare EVAL or EVALSHA (run scripts with LuaScript.run)', /\.eval(sha)?\s*\(/],
    ['Lua inline (redis.call belongs in a .lua file)', /redis\.p?call\s*\(/],
    ['a LuaScript built from a string (use LuaScript.load)', /new\s+LuaScript\s*\(/],
    ["ioredis's defineCommand (see LuaScript)", /\.defineCommand\s*\(/],
  ])('no file but the script class holds %s', (_what, pattern) => {
    const offenders = sources.filter((path) => rel(path) !== SCRIPT_CLASS && pattern.test(readFileSync(path, 'utf8')));
    expect(offenders.map(rel)).toEqual([]);
  });
});

interface Script {
  pkg: string;
  name: string;
  path: string;
  text: string;
}

const scripts: Script[] = PACKAGES.flatMap((pkg) =>
  filesUnder(join(pkg, 'lua'), '.lua').map((path) => ({
    pkg,
    name: relative(join(pkg, 'lua'), path).replace(/\.lua$/, ''),
    path,
    text: readFileSync(path, 'utf8'),
  })),
);
const isInclude = (s: Script) => s.name.startsWith('includes/');
/** The store's shared scripts and includes, which every capability package's scripts may include after their own. */
const SHARED = join(ROOT, 'libs/storage');
const INCLUDE = /^--- @include "([a-z0-9/-]+)"$/gm;

/** The script with its includes in place, as LuaScript.load sends it. */
function expanded(script: Script): string {
  return script.text.replace(INCLUDE, (_line, part: string) => {
    const included = [script.pkg, SHARED].map((pkg) => scripts.find((s) => s.pkg === pkg && s.name === part)).find((s) => s !== undefined);
    if (!included) throw new Error(`${rel(script.path)} includes ${part}, which is not there`);
    return expanded(included);
  });
}

/** The leading `--[[ … ]]` block, after the flags line a script may need first (`#!lua flags=…`). */
const headerOf = (text: string) => /^(?:#!lua[^\n]*\n)?--\[\[\n([\s\S]*?)\n\]\]\n/.exec(text)?.[1];
/** Code only: Lua's block and line comments removed. */
const codeOf = (text: string) => text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');

describe('Lua files', () => {
  it('are there, in the packages whose keys they touch', () => {
    expect(scripts.filter((s) => !isInclude(s)).length).toBeGreaterThan(20);
    expect(new Set(scripts.map((s) => rel(s.pkg)))).toEqual(new Set(['libs/queues', 'libs/storage', 'libs/callbacks', 'libs/jobs', 'libs/accounts']));
  });

  it('each open with a header', () => {
    expect(scripts.filter((s) => headerOf(s.text) === undefined).map((s) => rel(s.path))).toEqual([]);
  });

  it('each script names every KEYS[i] and ARGV[i] it reads under Input:, and its answers under Output:', () => {
    const problems = scripts
      .filter((s) => !isInclude(s))
      .flatMap((s) => {
        const header = headerOf(s.text) ?? '';
        const used = [...new Set([...codeOf(expanded(s)).matchAll(/\b(KEYS|ARGV)\[(\d+)\]/g)].map((m) => `${m[1]}[${m[2]}]`))];
        const missing = used.filter((ref) => !new RegExp(`^\\s+${ref.replace(/[[\]]/g, '\\$&')} `, 'm').test(header));
        return [
          ...(/^\s+Input:$/m.test(header) || used.length === 0 ? [] : [`${s.name}: no Input:`]),
          ...(/^\s+Output:$/m.test(header) ? [] : [`${s.name}: no Output:`]),
          ...missing.map((ref) => `${s.name}: ${ref} is not in its header`),
        ];
      });
    expect(problems).toEqual([]);
  });

  it('each script is loaded by its package, and each include is included', () => {
    const loaded = (s: Script) => filesUnder(join(s.pkg, 'src'), '.ts').some((path) => readFileSync(path, 'utf8').includes(`'${s.name}'`));
    const included = (s: Script) => scripts.some((other) => (other.pkg === s.pkg || s.pkg === SHARED) && other.text.includes(`--- @include "${s.name}"`));
    const orphans = scripts.filter((s) => (isInclude(s) ? !included(s) : !loaded(s)));
    expect(orphans.map((s) => rel(s.path))).toEqual([]);
  });
});
