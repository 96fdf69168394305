// The docs name things that exist elsewhere: pages and their sections, admin commands and their
// flags, settings, API paths, dashboard pages, folders. A rename in the code leaves a doc that reads
// well and is wrong, and nothing else notices; so every name a doc uses is looked up here. (The
// examples themselves run in readme.test.ts; the settings table is held by the configuration contract.)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { CONFIG_KEYS, loadConfig } from '@media/common';
import { COMMANDS } from '../../tools/admin/src/admin';
import { buildOpenApiDocument } from '../../services/api-gateway/src/openapi/document';

const ROOT = resolve(__dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const exists = (path: string) => {
  try {
    statSync(join(ROOT, path));
    return true;
  } catch {
    return false;
  }
};

const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'k8s/README.md',
];

/** The page without its fenced blocks, for what it says in prose (blocks are examples and output). */
function prose(text: string): string {
  let fence = false;
  return text
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) {
        fence = !fence;
        return '';
      }
      return fence ? '' : line;
    })
    .join('\n');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, title] of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = title
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every upper-case name with an underscore in the repository's code and scripts: what a doc may call a variable. */
function namesInCode(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (['node_modules', 'dist', '.cache', 'var', '.git', 'docs', 'coverage'].includes(entry.name)) continue;
      const path = join(dir, entry.name);
      // The settings' descriptions are the settings table's text, not names the code reads; the settings themselves are CONFIG_KEYS.
      if (path === join('libs', 'common', 'src', 'settings.ts')) continue;
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|tsx|mts|mjs|js|sh|ya?ml)$|^Dockerfile$|^\.env\.example$/.test(entry.name)) {
        for (const [name] of read(path).matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g)) names.add(name);
      }
    }
  };
  for (const dir of ['libs', 'services', 'tools', 'test', 'bench', 'scripts', 'k8s', '.ci']) if (exists(dir)) walk(dir);
  for (const file of ['Dockerfile', 'docker-compose.yml', '.env.example']) {
    for (const [name] of read(file).matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g)) names.add(name);
  }
  return names;
}

/** Programs whose command lines look like the admin CLI's (`redis-cli --scan`). */
const OTHER_PROGRAMS = ['redis-cli', 'redis-server', 'kubectl', 'npm', 'npx', 'node', 'curl', 'docker', 'buildah', 'podman', 'debootstrap'];

/** Names of other software that the docs tell operators about (the AWS SDK's chain, the openai SDK's, OpenTelemetry's exporter, a kernel limit). */
const OTHER_SOFTWARE = [
  // The kernel's limit that keeps `podman run` from starting here (docs/operations.md, the image test).
  'RLIMIT_NPROC',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'OPENAI_CUSTOM_HEADERS',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
];

describe.each(PAGES)('%s', (page) => {
  const text = read(page);

  it('links only to files of the repository and to headings that exist', () => {
    const problems: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|mailto:)/.test(target)) continue;
      const [path, fragment] = target.split('#');
      const file = path === '' ? page : normalize(join(dirname(page), path));
      if (relative(ROOT, join(ROOT, file)).startsWith('..') || !exists(file)) problems.push(`${target}: no such file`);
      else if (fragment !== undefined && file.endsWith('.md') && !anchors(read(file)).has(fragment)) problems.push(`${target}: no such heading in ${file}`);
    }
    expect(problems).toEqual([]);
  });

  it('cites no absolute path and nothing outside the repository', () => {
    expect(text).not.toMatch(/(^|[\s(`'"])\/(work|home|Users|root)\//m);
    expect(text).not.toMatch(/\.\.\/shared\b/);
  });

  it('names only admin commands that exist, with flags they take', () => {
    const problems: string[] = [];
    const calls = [
      ...text.matchAll(/(?:npm run -s admin --|tools\/admin\/dist\/main\.js) ([a-z][a-z-]*)([^\n`|]*)/g),
      // `rotate-secret --workspace ID`: a command with flags quoted on its own, as lists of commands do.
      ...text.matchAll(/`([a-z][a-z0-9-]*)((?: [a-z][a-z0-9-]*)?(?: --[a-z-]+(?:[ =][^`\s]+)?)+)[^`]*`/g),
    ];
    for (const [, command, rest] of calls) {
      if (OTHER_PROGRAMS.includes(command)) continue;
      const known = COMMANDS[command];
      if (!known) {
        problems.push(`no admin command "${command}"`);
        continue;
      }
      for (const [, flag] of rest.matchAll(/(?:^|\s)--([a-z][a-z-]*)/g)) if (!known.usage.includes(`--${flag}`)) problems.push(`${command} takes no --${flag}`);
    }
    expect(problems).toEqual([]);
  });

  it('names only settings and variables that something reads', () => {
    const known = new Set([...CONFIG_KEYS, ...namesInCode(), ...OTHER_SOFTWARE]);
    // Shell variables the examples set themselves (`BASE=…`, `API_KEY=$(…)`).
    for (const [, name] of text.matchAll(/^(?:export )?([A-Z][A-Z0-9_]*)=/gm)) known.add(name);
    const named = [...text.matchAll(/`[^`\n]*`/g)].flatMap(([quoted]) => [...quoted.matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g)].map((m) => m[0]));
    expect([...new Set(named.filter((name) => !known.has(name)))]).toEqual([]);
  });

  it('names only API paths that the OpenAPI document has', () => {
    const templates = Object.keys(buildOpenApiDocument(loadConfig({})).paths ?? {}).map((path) => path.split('/'));
    const isParameter = (segment: string) => /^\{\w+\}$/.test(segment);
    const matches = (path: string) => {
      const segments = path
        .replace(/[.,:;)]+$/, '')
        .replace(/(?<=[^/])…$/, '/…')
        .split('/');
      // `/v1/images/…` or `/v1/files/`: the start of some path.
      const prefix = ['', '…'].includes(segments.at(-1) ?? '');
      const wanted = prefix ? segments.slice(0, -1) : segments;
      return templates.some((template) => {
        for (const [i, segment] of wanted.entries()) {
          // A file key holds slashes: the last parameter of /v1/files/{key} takes the rest.
          if (template[i] === '{key}' && i === template.length - 1) return true;
          if (template[i] === undefined || !(template[i] === segment || isParameter(template[i]) || isParameter(segment))) return false;
        }
        return prefix || wanted.length === template.length;
      });
    };
    const paths = [...text.matchAll(/(?<![\w.-])\/v1\/[A-Za-z0-9_{}.…/-]*/g)].map((m) => m[0]);
    expect(paths.filter((path) => !matches(path))).toEqual([]);
  });
});

describe('docs/dashboard.md', () => {
  it('names only dashboard pages that the app routes', () => {
    const app = read('libs/dashboard/web/src/app.tsx');
    const routes = new Set([...app.matchAll(/<Route path="([^"]+)"/g)].map((m) => m[1].replace(/:(\w+)/g, '{$1}')));
    const pages = [...read('docs/dashboard.md').matchAll(/`\/dashboard(\/(?!api\b)[a-z-]+(?:\/\{id\})?)`/g)].map((m) => m[1]);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(pages.filter((page) => !routes.has(page))).toEqual([]);
  });
});

describe('docs/development.md', () => {
  const layout = /^## Repository layout\n[\s\S]*?```\n([\s\S]*?)```/m.exec(read('docs/development.md'))?.[1] ?? '';

  it('shows every library, service and tool in the repository layout, and nothing that is not there', () => {
    const listed = [...layout.matchAll(/(?:^|\s)((?:libs|services|tools|scripts|bench|test|k8s)\/[\w.-]*\/?)/gm)].map((m) => m[1].replace(/\/$/, ''));
    expect(listed.filter((path) => !exists(path))).toEqual([]);
    const folders = ['libs', 'services', 'tools'].flatMap((top) =>
      readdirSync(join(ROOT, top), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `${top}/${e.name}`),
    );
    expect(folders.filter((folder) => !listed.includes(folder))).toEqual([]);
  });

  it('names only npm scripts that package.json has', () => {
    // The root's scripts, and those of workspaces (`npm run build:web -w @media/dashboard`).
    const manifests = [
      'package.json',
      ...['libs', 'services', 'tools'].flatMap((top) => readdirSync(join(ROOT, top)).map((name) => `${top}/${name}/package.json`)),
    ];
    const scripts = manifests.filter(exists).flatMap((file) => Object.keys((JSON.parse(read(file)) as { scripts?: Record<string, string> }).scripts ?? {}));
    const named = PAGES.flatMap((page) => [...read(page).matchAll(/npm run (?:-s )?([a-z][\w-]*(?::[\w-]+)?)/g)].map((m) => m[1]));
    expect(named.length).toBeGreaterThan(3);
    expect([...new Set(named.filter((name) => !scripts.includes(name)))]).toEqual([]);
  });
});
