// docker-compose.yml and k8s/ run the image the Dockerfile builds: every command they give must be
// a file the build produces, every port one the services listen on and the image exposes, every
// path a volume is mounted at one the settings name, and every variable a setting. The static part
// reads the repository (the packages are built: `npm test` runs tsc -b first); the image part reads
// the config of the image `npm run test:image` has just built, which runs this file again for it.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '@media/common';

const ROOT = resolve(__dirname, '../..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
const dockerfile = read('Dockerfile');
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, any> };
const k8s = ['api-gateway', 'generator', 'webhook-dispatcher'].flatMap((name) => parseAllDocuments(read(`k8s/base/${name}.yaml`)).map((d) => d.toJS()));
const deployments = k8s.filter((o) => o.kind === 'Deployment');
const configMap = parseAllDocuments(read('k8s/base/config.yaml'))[0]!.toJS().data as Record<string, string>;
const appServices = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

/** The runtime stage's ENV, USER, WORKDIR and EXPOSE. */
const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
const imageEnv = Object.fromEntries([.../(\w+)=(\S+)/g[Symbol.matchAll](/^ENV ((?:[^\n]*\\\n)*[^\n]*)/m.exec(runtime)![1])].map((m) => [m[1], m[2]]));
const exposed = /^EXPOSE (.*)$/m.exec(runtime)![1].split(/\s+/).map(Number);
/** Variables of the image that are Node's or the base image's, not settings of ours. */
const NOT_SETTINGS = ['NODE_ENV', 'PATH', 'NODE_VERSION', 'YARN_VERSION', 'NODE_EXTRA_CA_CERTS', 'HOME'];

/** `node <file> …` runs a file of the build output, copied into the image (every package's dist/). */
function expectBuiltCommand(command: string[]): void {
  expect(command[0]).toBe('node');
  expect(command[1]).toMatch(/^(services|tools|libs)\/[a-z-]+\/dist\/.+\.js$/);
  expect([command[1], existsSync(resolve(ROOT, command[1]))]).toEqual([command[1], true]);
}

describe('docker-compose.yml and the image', () => {
  it('runs the three services, each with a command the build produces', () => {
    expect(appServices.map(([name]) => name).sort()).toEqual(['api-gateway', 'generator', 'webhook-dispatcher']);
    for (const [, service] of appServices) {
      expectBuiltCommand(service.command);
      expect(service.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
      // No user of its own: the image's (uid 1000), which the media volume's owner matches.
      expect(service.user).toBeUndefined();
    }
    // The admin CLI the comments tell the operator to run.
    for (const m of read('docker-compose.yml').matchAll(/\bnode ((?:services|tools)\/[\w/-]+\.js)/g)) expectBuiltCommand(['node', m[1]]);
  });

  it('publishes and probes the ports the services listen on, which the image exposes', () => {
    const gateway = compose.services['api-gateway'];
    const port = loadConfig({ PORT: gateway.environment.PORT }).port;
    expect(gateway.ports).toEqual([`${port}:${port}`]);
    expect(exposed).toContain(port);
    expect(gateway.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${port}/readyz`);
    for (const [, service] of appServices) expect(exposed).toContain(loadConfig({ OPS_PORT: service.environment.OPS_PORT }).opsPort);
  });

  it('mounts the media volume where MEDIA_DIR points, as the image does', () => {
    expect(imageEnv.MEDIA_DIR).toBe('/data/media');
    for (const [, service] of appServices) {
      expect(service.environment.MEDIA_DIR).toBe(imageEnv.MEDIA_DIR);
      expect(service.volumes).toContain(`media:${imageEnv.MEDIA_DIR}`);
    }
  });

  it('sets only settings, and the image sets only settings and Node variables', () => {
    for (const [, service] of appServices) expect(Object.keys(service.environment).filter((k) => !CONFIG_KEYS.includes(k))).toEqual([]);
    expect(Object.keys(imageEnv).filter((k) => !CONFIG_KEYS.includes(k) && !NOT_SETTINGS.includes(k))).toEqual([]);
    // NODE_ENV=production wants a DOCS_URL of the operator's own (compose and k8s require one).
    expect(() => loadConfig({ ...imageEnv, DOCS_URL: 'https://docs.media.test' })).not.toThrow();
  });
});

describe('k8s/base and the image', () => {
  it('runs each Deployment with a command the build produces, as the image user, with its volumes where the settings point', () => {
    expect(deployments).toHaveLength(3);
    const user = /^USER (\S+)$/m.exec(runtime)![1];
    expect(user).toBe('node'); // uid 1000 in the Node.js images and the stand-in of npm run test:image
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      const [container] = pod.containers;
      expectBuiltCommand(container.command);
      expect(pod.securityContext).toMatchObject({ runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true });
      // A read-only root: the scratch directory (under /tmp) and MEDIA_DIR are the volumes, or the
      // services refuse to start (checkScratchDir, checkBlobStoreWritable).
      const mounts = (container.volumeMounts as Array<{ mountPath: string }>).map((m) => m.mountPath);
      expect(mounts).toContain('/tmp');
      if (d.metadata.name !== 'webhook-dispatcher') expect(mounts).toContain(configMap.MEDIA_DIR);
      for (const port of container.ports as Array<{ containerPort: number }>) expect(exposed).toContain(port.containerPort);
      for (const e of container.env ?? []) expect([e.name, CONFIG_KEYS.includes(e.name)]).toEqual([e.name, true]);
    }
    expect(configMap.MEDIA_DIR).toBe(imageEnv.MEDIA_DIR);
  });
});

// The built image's own config: `npm run test:image` runs this file again with IMAGE_TEST_CONFIG
// naming the config it wrote (var/image-test/image-config.json) once it has built the image. The
// ordinary suite has no image to read, and declares nothing here.
const built = process.env.IMAGE_TEST_CONFIG;
if (built)
  describe('the image npm run test:image built', () => {
    const { config } = JSON.parse(readFileSync(built, 'utf8')) as {
      config: { User: string; WorkingDir: string; Env: string[]; Cmd: string[]; ExposedPorts: Record<string, unknown> };
    };

    it('has the user, ports, command and settings that compose and k8s rely on', () => {
      expect(config.User).toBe('node');
      expect(config.WorkingDir).toBe('/app');
      expect(Object.keys(config.ExposedPorts).sort()).toEqual(exposed.map((p) => `${p}/tcp`).sort());
      expectBuiltCommand(config.Cmd);
      const names = config.Env.map((kv) => kv.slice(0, kv.indexOf('=')));
      expect(names.filter((k) => !CONFIG_KEYS.includes(k) && !NOT_SETTINGS.includes(k))).toEqual([]);
      for (const [name, value] of Object.entries(imageEnv)) expect(config.Env).toContain(`${name}=${value}`);
    });
  });
