// k8s/ is a contract with the platform team: every overlay must build, validate against the
// Kubernetes, KEDA and prometheus-operator schemas (shipped in npm packages, nothing downloaded),
// name only settings the services read, probe only paths and ports the code serves, and agree with
// the Dockerfile (commands, ports, user).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '@media/common';
import { kustomizeLite, type K8sObject } from './kustomize-lite';

const ROOT = resolve(__dirname, '../..');
const OVERLAYS = ['base', 'overlays/dev', 'overlays/prod'];
const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

const build = (dir: string): K8sObject[] => {
  const path = resolve(ROOT, 'k8s', dir);
  if (!hasKubectl) return kustomizeLite(path);
  const out = execFileSync('kubectl', ['kustomize', path], { encoding: 'utf8' });
  return parseAllDocuments(out).map((d) => d.toJS() as K8sObject);
};
const built = Object.fromEntries(OVERLAYS.map((o) => [o, build(o)]));
/** Secret media-secrets as the platform team is told to make it (no overlay holds it). */
const exampleSecret = parseAllDocuments(readFileSync(resolve(ROOT, 'k8s/secret.example.yaml'), 'utf8'))[0]!.toJS() as K8sObject;
/** A container's setting: its own `env` value over the ConfigMap's. */
const settingOf = (c: any, config: K8sObject, name: string): string | undefined => c.env?.find((e: any) => e.name === name)?.value ?? config.data[name];
const deployments = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment');
const containers = (o: K8sObject): any[] => o.spec?.template?.spec?.containers ?? [];

/** Settings that are credentials: a Secret's, never the ConfigMap's. */
const CREDENTIALS = ['LINK_SIGNING_SECRET', 'OPERATOR_PASSWORD', 'UPSTREAM_API_KEY', 'SECRETS_ENCRYPTION_KEYS'];

const COMMANDS: Record<string, string> = {
  'api-gateway': 'services/api-gateway/dist/main.js',
  generator: 'services/generator/dist/main.js',
  'webhook-dispatcher': 'services/webhook-dispatcher/dist/main.js',
};

describe.each(OVERLAYS)('k8s/%s', (overlay) => {
  const objects = built[overlay];

  it('builds', () => {
    expect(objects.length).toBeGreaterThan(0);
    expect(
      deployments(objects)
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(Object.keys(COMMANDS).sort());
  });

  it('validates every object against its schema', () => {
    const out = execFileSync(process.execPath, [resolve(__dirname, 'validate-objects.mjs')], { input: JSON.stringify(objects), encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual([]);
  });

  it('names only settings of the config module', () => {
    const names = new Set<string>(Object.keys(exampleSecret.stringData));
    for (const o of objects) {
      if (o.kind === 'ConfigMap' && o.metadata.name === 'media-config') for (const key of Object.keys(o.data)) names.add(key);
      for (const c of containers(o)) {
        for (const e of c.env ?? []) {
          names.add(e.name);
          if (e.valueFrom?.secretKeyRef) names.add(e.valueFrom.secretKeyRef.key);
        }
      }
    }
    expect(names.size).toBeGreaterThan(5);
    expect([...names].filter((n) => !CONFIG_KEYS.includes(n))).toEqual([]);
    // And the values parse: the services would refuse to start otherwise.
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    expect(() => loadConfig({ ...config.data, OPERATOR_PASSWORD: 'x'.repeat(16) })).not.toThrow();
    // The example Secret's placeholders are not: a deployment that kept one would not start.
    const placeholders = Object.entries<string>(exampleSecret.stringData);
    expect(placeholders.length).toBeGreaterThanOrEqual(3);
    for (const [key, value] of placeholders) expect(() => loadConfig({ ...config.data, [key]: value })).toThrow(new RegExp(key));
  });

  it("starts in the image's production mode, which refuses DOCS_URL's placeholder", () => {
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/^ENV NODE_ENV=production\b/m);
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    expect(loadConfig({ ...config.data, NODE_ENV: 'production' }).docsUrl).not.toMatch(/\/\/docs\.example\.com\b/);
  });

  it('runs each service with its command, hardened, and probes what the code serves', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    const opsPort = loadConfig(config.data).opsPort;
    for (const d of deployments(objects)) {
      const pod = d.spec.template.spec;
      const [c] = containers(d);
      expect(c.command).toEqual(['node', COMMANDS[d.metadata.name]]);
      // The preStop pause, the drain and the close (5 s) fit in the grace period, or the kubelet cuts the drain.
      const shutdownS = loadConfig({ SHUTDOWN_TIMEOUT_MS: settingOf(c, config, 'SHUTDOWN_TIMEOUT_MS') }).shutdownTimeoutMs / 1000;
      const preStopS = Number(c.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      expect([d.metadata.name, pod.terminationGracePeriodSeconds > preStopS + shutdownS + 5]).toEqual([d.metadata.name, true]);
      // Its own service account (a workload role for it alone), no Kubernetes API token.
      expect(objects.some((o) => o.kind === 'ServiceAccount' && o.metadata.name === pod.serviceAccountName && o.automountServiceAccountToken === false)).toBe(
        true,
      );
      expect([d.metadata.name, pod.serviceAccountName, pod.automountServiceAccountToken]).toEqual([d.metadata.name, d.metadata.name, false]);
      // The autoscalers own the replica count: an apply must not reset it.
      expect([d.metadata.name, d.spec.replicas]).toEqual([d.metadata.name, undefined]);
      expect(pod.topologySpreadConstraints.map((t: any) => t.topologyKey)).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const t of pod.topologySpreadConstraints) expect(t.labelSelector.matchLabels['app.kubernetes.io/name']).toBe(d.metadata.name);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
      expect(c.volumeMounts).toEqual(expect.arrayContaining([{ name: 'tmp', mountPath: '/tmp' }]));
      expect(c.resources.requests).toBeDefined();
      expect(c.resources.limits).toBeDefined();
      const ops = c.ports.find((p: any) => p.name === 'ops');
      expect(ops.containerPort).toBe(opsPort);
      expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'ops' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'ops' });
      if (d.metadata.name === 'api-gateway') {
        expect(c.ports.find((p: any) => p.name === 'http').containerPort).toBe(loadConfig({}).port);
        // A waiting synchronous image call is answered before the gateway stops, and the endpoint
        // is gone from the load balancers before SIGTERM.
        expect(shutdownS * 1000).toBeGreaterThan(loadConfig({}).syncImageTimeoutMs);
        expect(preStopS).toBeGreaterThanOrEqual(5);
      }
      expect(objects.some((o) => o.kind === 'PodDisruptionBudget' && o.spec.selector.matchLabels['app.kubernetes.io/name'] === d.metadata.name)).toBe(true);
    }
  });

  it('keeps credentials in the Secret, and hands each service only the ones it uses', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    const credentials = CREDENTIALS.filter((name) => CONFIG_KEYS.includes(name));
    expect(credentials).toEqual(CREDENTIALS);
    expect(Object.keys(config.data).filter((key) => credentials.includes(key) || key.endsWith('PASSWORD'))).toEqual([]);
    // No overlay holds the Secret: an apply would put placeholders back over the real values.
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const used: Record<string, string[]> = {
      'api-gateway': ['LINK_SIGNING_SECRET', 'SECRETS_ENCRYPTION_KEYS', 'OPERATOR_PASSWORD'],
      generator: [],
      'webhook-dispatcher': ['LINK_SIGNING_SECRET', 'SECRETS_ENCRYPTION_KEYS'],
    };
    for (const d of deployments(objects)) {
      const [c] = containers(d);
      expect((c.envFrom ?? []).filter((f: any) => f.secretRef)).toEqual([]);
      const refs = (c.env ?? []).filter((e: any) => e.valueFrom?.secretKeyRef);
      for (const e of refs)
        expect([d.metadata.name, e.name, e.valueFrom.secretKeyRef.name]).toEqual([d.metadata.name, e.valueFrom.secretKeyRef.key, 'media-secrets']);
      // Never a literal credential in a manifest.
      for (const e of c.env ?? [])
        if (credentials.includes(e.name) || e.name.endsWith('PASSWORD'))
          expect([d.metadata.name, e.name, e.value]).toEqual([d.metadata.name, e.name, undefined]);
      const required = refs.filter((e: any) => !e.valueFrom.secretKeyRef.optional).map((e: any) => e.name);
      expect([d.metadata.name, required]).toEqual([d.metadata.name, used[d.metadata.name]]);
      for (const name of required) expect(Object.keys(exampleSecret.stringData)).toContain(name);
    }
  });

  it('opens the ops port to the pod address, where the kubelet probes and Prometheus scrape', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    expect(loadConfig({ ...config.data }).opsHost).toBe('0.0.0.0');
    // Outside Kubernetes the default stays loopback.
    expect(loadConfig({}).opsHost).toBe('127.0.0.1');
  });

  it("reaches the ops port by the pod's address only, the Host the port serves without OPS_ALLOWED_HOSTS", () => {
    // A probe with a `host` or a Host header, or a scrape through a Service's name, would be
    // answered 421 unless that name were listed in OPS_ALLOWED_HOSTS.
    for (const d of deployments(objects)) {
      for (const c of containers(d)) {
        for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe].filter(Boolean)) {
          expect([d.metadata.name, probe.httpGet.host, probe.httpGet.httpHeaders]).toEqual([d.metadata.name, undefined, undefined]);
        }
      }
    }
    // Prometheus scrapes pods (a PodMonitor: the pod's address), never a Service's name.
    expect(objects.filter((o) => o.kind === 'ServiceMonitor' || o.kind === 'Probe').map((o) => o.metadata.name)).toEqual([]);
    for (const monitor of objects.filter((o) => o.kind === 'PodMonitor')) {
      expect(monitor.spec.podMetricsEndpoints.map((e: any) => e.port)).toEqual(['ops']);
    }
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'media-config')!;
    const { opsPort, opsAllowedHosts } = loadConfig({ ...config.data });
    for (const service of objects.filter((o) => o.kind === 'Service')) {
      const targets = service.spec.ports.map((p: any) => p.targetPort);
      expect([service.metadata.name, targets.filter((t: unknown) => t === 'ops' || t === opsPort)]).toEqual([service.metadata.name, []]);
    }
    expect(opsAllowedHosts).toEqual([]);
  });

  if (hasKubectl) {
    it('renders the same with the kubectl-free fallback (test/k8s/kustomize-lite.ts)', () => {
      const normal = (list: K8sObject[]) => list.map((o) => JSON.stringify(sortKeys(o))).sort();
      expect(normal(kustomizeLite(resolve(ROOT, 'k8s', overlay)))).toEqual(normal(objects));
    });
  }
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, sortKeys(v)]),
  );
}

describe('the code serves what the probes ask for', () => {
  const source = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
  it('defaults OPS_PORT to the port the manifests probe, and serves /healthz, /readyz, /metrics there', () => {
    expect(loadConfig({}).opsPort).toBe(9464);
    const ops = source('libs/common/src/ops-server.ts');
    for (const path of ['/healthz', '/readyz', '/metrics']) expect(ops).toContain(`app.get('${path}'`);
    for (const service of Object.keys(COMMANDS)) expect(source(`services/${service}/src/service.ts`)).toMatch(/startOpsServer\(\{\s*port: config\.opsPort/);
  });
});

describe('prod autoscaling and policies', () => {
  const prod = built['overlays/prod'];
  it('scales the workers on active + waiting + prioritized + delayed_due of their own namespace, slowly down, never the dispatcher to zero', () => {
    const scaled = prod.filter((o) => o.kind === 'ScaledObject');
    expect(scaled.map((s) => s.spec.scaleTargetRef.name).sort()).toEqual(['generator', 'webhook-dispatcher']);
    const queries = scaled.flatMap((s) => s.spec.triggers.map((t: any) => [s.metadata.name, t.metadata.query]));
    expect(queries.map(([, q]) => /queue="([^"]+)"/.exec(q)![1]).sort()).toEqual(['callback-deliveries', 'generation', 'job-events']);
    for (const [, q] of queries) expect(q).toContain('media_queue_jobs{queue="');
    for (const [, q] of queries) expect(q).toContain(`state=~"active|waiting|prioritized|delayed_due",namespace="${prod[0]!.metadata.namespace}"`);
    for (const s of scaled) {
      // No data is an error that engages the fallback, which never takes replicas away.
      for (const t of s.spec.triggers) expect(t.metadata.ignoreNullValues).toBe('false');
      expect(s.spec.fallback.behavior).toBe('currentReplicasIfHigher');
      expect(s.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);
    }
    expect(scaled.find((s) => s.metadata.name === 'webhook-dispatcher')!.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(prod.find((o) => o.kind === 'HorizontalPodAutoscaler')!.spec.scaleTargetRef.name).toBe('api-gateway');
  });

  it('routes bodies and waits as large as the gateway takes through the Ingress, over TLS', () => {
    const ingress = prod.find((o) => o.kind === 'Ingress')!;
    const annotations = ingress.metadata.annotations!;
    const config = loadConfig({});
    const mib = Number(/^(\d+)m$/.exec(annotations['nginx.ingress.kubernetes.io/proxy-body-size'])![1]);
    expect(mib * 1024 * 1024).toBeGreaterThan(Math.max(config.maxJsonBytes, config.maxUploadTotalBytes));
    expect(Number(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']) * 1000).toBeGreaterThan(config.syncImageTimeoutMs);
    expect(ingress.spec.ingressClassName).toBeDefined();
    expect(ingress.spec.tls[0].hosts).toEqual(ingress.spec.rules.map((r: any) => r.host));
  });

  it('lets the dispatcher reach 443 on the internet and no private range', () => {
    const policy = prod.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'webhook-dispatcher-egress')!;
    const block = policy.spec.egress[0].to[0].ipBlock;
    expect(block.cidr).toBe('0.0.0.0/0');
    expect(block.except.sort()).toEqual(['10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16']);
    expect(policy.spec.egress[0].ports).toEqual([{ port: 443, protocol: 'TCP' }]);
  });

  it("alerts on the seven conditions of the runbook, each linked to its section, on its own namespace's series", () => {
    const rule = prod.find((o) => o.kind === 'PrometheusRule')!;
    const alerts = rule.spec.groups.flatMap((g: any) => g.rules);
    // Every series of ours (and of the pods' restarts) is read in the overlay's namespace only.
    for (const a of alerts) {
      for (const selector of a.expr.match(/\b(?:media_[a-z_]+|kube_pod_[a-z_]+)\{[^}]*\}/g) ?? [])
        expect([a.alert, selector]).toEqual([a.alert, expect.stringContaining(`namespace="${rule.metadata.namespace}"`)]);
      expect([a.alert, /\b(?:media_[a-z_]+|kube_pod_[a-z_]+)(?!\{|[a-z_])/.test(a.expr)]).toEqual([a.alert, false]);
    }
    const runbook = readFileSync(resolve(ROOT, 'docs/operations.md'), 'utf8');
    expect(alerts.map((a: any) => a.alert)).toEqual([
      'MediaCallbacksFailing',
      'MediaOldestWaitingJobTooOld',
      'MediaDispatcherLag',
      'MediaWorkerWedged',
      'MediaRedisMemoryNearLimit',
      'MediaRetentionBehind',
      'MediaRedisReplicaWaitShort',
    ]);
    for (const a of alerts) expect(runbook).toMatch(new RegExp(`^### ${a.alert}$`, 'm'));
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8');
  it('runs as the uid the manifests require, exposes their ports, and builds the commands they run', () => {
    expect(dockerfile).toMatch(/^USER node$/m); // uid 1000 in the official Node.js images
    expect(dockerfile).toMatch(/^EXPOSE 8080 9464$/m);
    for (const command of Object.values(COMMANDS)) expect(dockerfile).toContain(command);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:(22|24)-bookworm-slim$/m);
  });

  it('builds the dashboard app the gateway serves, and copies it into the runtime image', () => {
    expect(dockerfile).toContain('RUN node libs/dashboard/web/build-if-stale.mjs');
    // The runtime stage copies every package's dist/, which is where the Vite build writes.
    expect(dockerfile).toMatch(/cp -R "\$dir\/dist"/);
    expect(readFileSync(resolve(ROOT, 'libs/dashboard/web/vite.config.mts'), 'utf8')).toMatch(/outDir:[^\n]*dist\/web/);
  });

  it("copies every package's lua/ folder into the runtime image, where LuaScript.load reads it beside dist/", () => {
    // The build stage's copy step, run as written with its /out in a temporary folder (the packages
    // are built: the tests run after tsc -b), then compared with every lua/ folder of the repository.
    const step = /^RUN mkdir -p \/out(?:[^\n]*\\\n)*[^\n]*/m.exec(dockerfile)?.[0];
    expect(step).toBeDefined();
    expect(dockerfile).toContain('COPY --from=build /out/ ./');
    const out = mkdtempSync(join(tmpdir(), 'image-out-'));
    try {
      const script = step!.replace(/^RUN /, '').replaceAll('/out', out);
      execFileSync('bash', ['-c', script], { cwd: ROOT, stdio: 'pipe' });
      const luaFiles = (dir: string): string[] =>
        readdirSync(dir, { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.lua'))
          .sort();
      const packages = ['libs', 'services', 'tools'].flatMap((top) => readdirSync(resolve(ROOT, top)).map((name) => `${top}/${name}`));
      const withLua = packages.filter((pkg) => existsSync(resolve(ROOT, pkg, 'lua')));
      expect(withLua).toEqual(expect.arrayContaining(['libs/queues', 'libs/storage', 'libs/callbacks', 'libs/jobs', 'libs/accounts']));
      for (const pkg of withLua) {
        expect(existsSync(join(out, pkg, 'dist'))).toBe(true);
        expect({ pkg, files: luaFiles(join(out, pkg, 'lua')) }).toEqual({ pkg, files: luaFiles(resolve(ROOT, pkg, 'lua')) });
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    expect(readFileSync(resolve(ROOT, '.dockerignore'), 'utf8')).not.toMatch(/lua/);
  });
});
