// Writes the prod PrometheusRule's rule groups (k8s/overlays/prod/monitoring.yaml, `spec.groups`) as
// a plain Prometheus rules file, `DIR/rules.yaml`, with a copy of the alerts' unit tests beside it
// (`DIR/alerts.test.yaml`, whose `rule_files` names `rules.yaml`), so that promtool reads both as
// Prometheus would; the operator's CRD wraps the same groups. Prints DIR (a new temporary directory
// when none is given). By hand, from the repository's root:
//
//   dir=$(node test/k8s/alert-rules.mjs) && promtool check rules "$dir/rules.yaml" && promtool test rules "$dir/alerts.test.yaml"
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

const HERE = dirname(fileURLToPath(import.meta.url));
const MONITORING = resolve(HERE, '../../k8s/overlays/prod/monitoring.yaml');

const rules = parseAllDocuments(readFileSync(MONITORING, 'utf8'))
  .map((doc) => doc.toJS())
  .filter((o) => o?.kind === 'PrometheusRule');
if (rules.length !== 1) throw new Error(`expected one PrometheusRule in ${MONITORING}, found ${rules.length}`);

const dir = process.argv[2] ? resolve(process.argv[2]) : mkdtempSync(join(tmpdir(), 'media-alerts-'));
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: rules[0].spec.groups }, { lineWidth: 0 }));
copyFileSync(join(HERE, 'alerts.test.yaml'), join(dir, 'alerts.test.yaml'));
console.log(dir);
