// Validates Kubernetes objects (a JSON array on stdin) against the OpenAPI schemas shipped in the
// kubernetes-models packages (core, KEDA, prometheus-operator), offline. Those packages are ES
// modules only, so Jest (CommonJS) runs this as a child process. Prints [{kind, name, error}].
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const PACKAGES = ['kubernetes-models', '@kubernetes-models/keda', '@kubernetes-models/prometheus-operator'];

async function modelFor(apiVersion, kind) {
  // Core objects live under "v1", the rest under "<group>/<version>".
  for (const pkg of PACKAGES) {
    let url;
    try {
      const dir = require.resolve(`${pkg}/package.json`).replace(/package\.json$/, '');
      url = pathToFileURL(`${dir}${apiVersion}/index.js`).href;
    } catch {
      continue;
    }
    try {
      const mod = await import(url);
      if (mod[kind]) return mod[kind];
    } catch {
      // not in this package
    }
  }
  return undefined;
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
const problems = [];
for (const obj of JSON.parse(input)) {
  const Model = await modelFor(obj.apiVersion, obj.kind);
  const where = { kind: obj.kind, name: obj.metadata?.name };
  if (!Model) {
    problems.push({ ...where, error: `no schema for ${obj.apiVersion} ${obj.kind}` });
    continue;
  }
  try {
    new Model(obj).validate();
  } catch (err) {
    problems.push({ ...where, error: String(err?.message ?? err) });
  }
}
process.stdout.write(JSON.stringify(problems));
