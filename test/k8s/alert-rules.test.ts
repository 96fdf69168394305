// The prod PrometheusRule's alerts, read by Prometheus's own tooling rather than as YAML: promtool
// checks the rule groups (PromQL parses, durations and labels are valid, no duplicates) and runs the
// unit tests in alerts.test.yaml, where every alert fires on synthetic series and stays quiet just
// under its threshold or before its `for:` has passed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { finished } from '../support/process';
import { kustomizeLite } from './kustomize-lite';

const ROOT = resolve(__dirname, '../..');

const run = (command: string, args: string[]) => finished(spawn(command, args, { cwd: ROOT }));

let dir = '';
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'media-alerts-'));
  const wrote = await run(process.execPath, [join(__dirname, 'alert-rules.mjs'), dir]);
  expect([wrote.code, wrote.stderr]).toEqual([0, '']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The alert rules as the prod overlay deploys them. */
const deployedGroups = (): any[] => kustomizeLite(resolve(ROOT, 'k8s/overlays/prod')).find((o) => o.kind === 'PrometheusRule')!.spec.groups;

describe('the PrometheusRule, through promtool', () => {
  it('is what the prod overlay deploys (the rules file holds the same groups)', () => {
    const written = parse(readFileSync(join(dir, 'rules.yaml'), 'utf8')) as { groups: unknown[] };
    expect(written).toEqual({ groups: deployedGroups() });
  });

  it('passes `promtool check rules`, lint included', async () => {
    const checked = await run('promtool', ['check', 'rules', '--lint=all', '--lint-fatal', join(dir, 'rules.yaml')]);
    expect([checked.code, checked.stderr]).toEqual([0, '']);
    expect(checked.stdout).toContain('SUCCESS: 7 rules found');
  });

  it('would fail on a broken rule (this promtool reports errors by its exit code)', async () => {
    const broken = join(dir, 'broken.yaml');
    writeFileSync(broken, 'groups:\n  - name: broken\n    rules:\n      - alert: Broken\n        expr: sum(rate(media_callback_attempts_total[10m]) > 0\n');
    const checked = await run('promtool', ['check', 'rules', broken]);
    expect(checked.code).not.toBe(0);
    expect(checked.stderr).toMatch(/parse error/);
  });

  it('passes its unit tests (alerts.test.yaml), which make every alert fire and keep it quiet', async () => {
    const tested = await run('promtool', ['test', 'rules', join(dir, 'alerts.test.yaml')]);
    expect([tested.code, tested.stderr]).toEqual([0, '']);
    expect(tested.stdout).toContain('SUCCESS');

    type AlertTest = { alertname: string; exp_alerts?: unknown[] };
    const tests = (parse(readFileSync(join(__dirname, 'alerts.test.yaml'), 'utf8')) as { tests: { alert_rule_test?: AlertTest[] }[] }).tests;
    const checks = tests.flatMap((t) => t.alert_rule_test ?? []);
    const alerts = deployedGroups().flatMap((g: { rules: { alert?: string }[] }) => g.rules.map((r) => r.alert));
    expect(alerts).toHaveLength(7);
    for (const alert of alerts) {
      const mine = checks.filter((c) => c.alertname === alert);
      expect([alert, mine.some((c) => (c.exp_alerts ?? []).length > 0), mine.some((c) => (c.exp_alerts ?? []).length === 0)]).toEqual([alert, true, true]);
    }
  });
});
