// The settings declared in libs/common/src/settings.ts are a contract with operators:
// docs/configuration.md's table is written from the declarations (`npm run docs:config`) and must
// say what they say, .env.example lists each with its default, and docker-compose.yml / k8s notes may
// only set names the services actually read (a misspelt variable is silently ignored at run time, so
// it has to be caught here).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CONFIG_KEYS, loadConfig, settingRow, settingsTable, type SettingName } from '@media/common';

const ROOT = resolve(__dirname, '../..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');

/** Names the design (section 3) and the compose brief require compose to show, so the regex below cannot pass by finding nothing. */
const REQUIRED_IN_COMPOSE = [
  'REDIS_URL',
  'PUBLIC_BASE_URL',
  'DOCS_URL',
  'LINK_TTL_SECONDS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_RETRY_SCHEDULE',
  'SECRET_ROTATION_OVERLAP_SECONDS',
  'CALLBACK_ALLOW_HTTP',
  'CALLBACK_ALLOWED_CIDRS',
  'CALLBACK_CA_FILE',
  'MEDIA_DIR',
  'KEY_PREFIX',
  'GENERATOR_CONCURRENCY',
  'DISPATCHER_CONCURRENCY',
];

const indentOf = (line: string) => line.length - line.trimStart().length;

/**
 * Variable names set in the `environment:` blocks of a compose file (and in `x-…environment: &anchor`
 * extension blocks merged into them). Handles `KEY: value`, `- KEY=value` and commented-out
 * `# KEY: value` entries; commented names count too, so a typo in an example is caught as well.
 * No YAML library is a dependency, hence the line-based reading.
 */
export function composeEnvironmentNames(text: string): { names: string[]; headers: number } {
  const lines = text.split(/\r?\n/);
  const names: string[] = [];
  let headers = 0;
  for (let i = 0; i < lines.length; i++) {
    const header = /^(\s*)(?:x-[\w-]*environment|environment)\s*:\s*(?:&[\w-]+)?\s*(?:#.*)?$/.exec(lines[i]);
    if (!header) continue;
    headers++;
    const indent = header[1].length;
    for (let j = i + 1; j < lines.length; j++) {
      const line = lines[j];
      const body = line.trim();
      if (body === '') continue;
      const comment = body.startsWith('#');
      if (indentOf(line) <= indent) {
        if (comment) continue; // a comment outside the block does not end it
        break;
      }
      if (body.startsWith('<<:')) continue; // merge of an anchor parsed on its own
      const match = comment ? /^#\s*([A-Z][A-Z0-9_]*)\s*[:=]/.exec(body) : /^(?:-\s*)?["']?([A-Za-z_][A-Za-z0-9_]*)["']?\s*(?::|=|$)/.exec(body);
      if (match) names.push(match[1]);
      else if (!comment) throw new Error(`cannot read environment entry: ${body}`);
    }
  }
  return { names, headers };
}

describe('configuration contract', () => {
  it('CONFIG_KEYS is the full, upper-case list of settings', () => {
    expect(CONFIG_KEYS.length).toBeGreaterThanOrEqual(REQUIRED_IN_COMPOSE.length);
    for (const key of CONFIG_KEYS) expect(key).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });

  describe('docs/configuration.md', () => {
    // The settings table is everything before the first section (media storage, backends, Redis…).
    const section = /^# Configuration\b[\s\S]*?(?=^## )/m.exec(read('docs/configuration.md'))?.[0] ?? '';
    /** The table's lines: from its header to the first line that is not a table row. */
    const lines = section.split('\n');
    const start = lines.findIndex((line) => line.startsWith('| Variable |'));
    const end = lines.findIndex((line, i) => i > start && !line.startsWith('|'));
    const table = start === -1 ? [] : lines.slice(start, end === -1 ? undefined : end);
    const FIX = 'npm run docs:config rewrites the table from libs/common/src/settings.ts';

    it('has the settings table', () => {
      expect(section).toMatch(/^\| Variable \|/m);
    });

    it.each([...CONFIG_KEYS])('documents %s as settings.ts declares it: default, meaning and readers', (key) => {
      const row = table.find((line) => line.startsWith(`| \`${key}\` |`));
      expect([row, FIX]).toEqual([settingRow(key as SettingName), FIX]);
    });

    it('is the table npm run docs:config writes (the same rows, in the order of the declarations)', () => {
      expect([table.join('\n'), FIX]).toEqual([settingsTable(), FIX]);
    });

    it('documents no setting that the code does not read', () => {
      const documented = [...section.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]);
      expect(documented.filter((name) => !CONFIG_KEYS.includes(name))).toEqual([]);
    });
  });

  describe('docker-compose.yml', () => {
    const compose = read('docker-compose.yml');
    const { names, headers } = composeEnvironmentNames(compose);

    it('every environment: key is parsed as a block', () => {
      // An inline `environment: {…}` or `[…]` would hide its names from the parser above.
      const all = compose.split(/\r?\n/).filter((l) => /^\s*(?:x-[\w-]*)?environment\s*:/.test(l)).length;
      expect(headers).toBe(all);
      expect(headers).toBeGreaterThanOrEqual(1);
    });

    it('sets only variables that are settings in config.ts', () => {
      expect([...new Set(names.filter((name) => !CONFIG_KEYS.includes(name)))]).toEqual([]);
    });

    it('shows the contract settings', () => {
      expect(REQUIRED_IN_COMPOSE.filter((name) => !names.includes(name))).toEqual([]);
    });

    it("asks for DOCS_URL rather than defaulting to the placeholder the image's production mode refuses", () => {
      expect(read('Dockerfile')).toMatch(/^ENV NODE_ENV=production\b/m);
      expect(compose).toMatch(/^\s+DOCS_URL: \$\{DOCS_URL:\?[^}]+\}$/m);
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/DOCS_URL/);
    });
  });

  describe('.env.example', () => {
    const lines = read('.env.example').split(/\r?\n/);
    /** `KEY=value` (active) and `# KEY=value` (commented out), with the line each is on. */
    const entries = lines.flatMap((line, index) => {
      const match = /^(#\s*)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
      return match ? [{ index, name: match[2], value: match[3], active: match[1] === undefined }] : [];
    });
    const names = entries.map((e) => e.name);
    const active = entries.filter((e) => e.active);

    it('lists every setting exactly once', () => {
      expect([...names].sort()).toEqual([...CONFIG_KEYS].sort());
    });

    it('names no variable that is not a setting, in entries or in comments', () => {
      // Every other line is a comment or blank, so a misspelt name cannot hide in an odd form.
      const other = lines.filter((line, index) => line.trim() !== '' && !line.startsWith('#') && !entries.some((e) => e.index === index));
      expect(other).toEqual([]);
      const mentioned = [...read('.env.example').matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g)].map((m) => m[0]);
      expect([...new Set(mentioned.filter((name) => !CONFIG_KEYS.includes(name)))]).toEqual([]);
    });

    it('gives each setting a one-line comment above it', () => {
      for (const entry of entries) {
        const above = lines[entry.index - 1] ?? '';
        expect([entry.name, above]).toEqual([entry.name, expect.stringMatching(/^# \S/)]);
        expect(entries.some((e) => e.index === entry.index - 1)).toBe(false);
      }
    });

    it('sets only the defaults, in a form the shell, docker compose and node --env-file read alike', () => {
      for (const entry of active) expect([entry.name, entry.value]).toEqual([entry.name, expect.stringMatching(/^[A-Za-z0-9_./:,-]*$/)]);
      const env = Object.fromEntries(active.map((e) => [e.name, e.value]));
      expect(loadConfig(env)).toEqual(loadConfig({}));
    });
  });

  describe('k8s/README.md', () => {
    it('names only variables that are settings in config.ts', () => {
      const text = read('k8s/README.md');
      const named = [...text.matchAll(/`([A-Z][A-Z0-9]*_[A-Z0-9_]+|PORT)`/g)].map((m) => m[1]);
      expect(named.length).toBeGreaterThan(0);
      expect([...new Set(named.filter((name) => !CONFIG_KEYS.includes(name)))]).toEqual([]);
    });
  });
});

describe('composeEnvironmentNames', () => {
  it('reads mapping, list, merged and commented entries, and stops at the block end', () => {
    const text = [
      'x-common-environment: &env',
      '  REDIS_URL: redis://redis:6379',
      '  # CALLBACK_CA_FILE: /etc/ca.pem',
      'services:',
      '  api:',
      '    environment:',
      '      <<: *env',
      '      PORT: "8080"',
      '      # explanatory prose is ignored',
      '    command: ["node"]',
      '  worker:',
      '    environment:',
      '      - KEY_PREFIX=media',
      '      - "LOG_LEVEL=debug"',
      '    ports:',
      '      - "8080:8080"',
    ].join('\n');
    expect(composeEnvironmentNames(text)).toEqual({
      names: ['REDIS_URL', 'CALLBACK_CA_FILE', 'PORT', 'KEY_PREFIX', 'LOG_LEVEL'],
      headers: 3,
    });
  });
});
