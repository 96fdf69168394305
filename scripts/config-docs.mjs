// `npm run docs:config`: writes the settings table of docs/configuration.md (the first table, above
// the page's first section) from the declarations in libs/common/src/settings.ts. It reads them from
// the built @media/common, so the npm script runs `tsc -b` first. test/repo/config-contract.test.ts
// fails while the page's table differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const { settingsTable } = createRequire(import.meta.url)('@media/common');
const page = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/configuration.md');
const lines = readFileSync(page, 'utf8').split('\n');
const start = lines.findIndex((line) => line.startsWith('| Variable |'));
const firstSection = lines.findIndex((line) => line.startsWith('## '));
if (start === -1 || (firstSection !== -1 && start > firstSection)) {
  console.error('docs/configuration.md: no settings table (a line starting "| Variable |") above the first section');
  process.exit(1);
}
let end = start;
while (end < lines.length && lines[end].startsWith('|')) end++;
const table = settingsTable().split('\n');
const changed = lines.slice(start, end).join('\n') !== table.join('\n');
lines.splice(start, end - start, ...table);
writeFileSync(page, lines.join('\n'));
console.log(
  changed ? `docs/configuration.md: settings table rewritten (${table.length - 2} settings)` : 'docs/configuration.md: settings table already current',
);
