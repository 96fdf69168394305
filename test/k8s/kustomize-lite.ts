import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';

/**
 * The subset of kustomize this repository's k8s/ uses (resources, namespace, labels without
 * selectors, images, strategic-merge patches of maps), for machines without kubectl: no kustomize
 * build is published on the npm registry, only unrelated or binary-downloading packages. Where
 * kubectl exists, the test checks that this renders exactly what `kubectl kustomize` renders, so the
 * subset cannot silently drift from real kustomize.
 */
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: any;
};

interface Kustomization {
  resources?: string[];
  namespace?: string;
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean }>;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  patches?: Array<{ path: string }>;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Maps merge key by key; anything else (lists included, as the patches here never touch one) is replaced. */
function merge(base: unknown, patch: unknown): unknown {
  if (!isMap(base) || !isMap(patch)) return patch;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) out[key] = key in base ? merge(base[key], value) : value;
  return out;
}

const readDocs = (path: string): K8sObject[] =>
  parseAllDocuments(readFileSync(path, 'utf8'))
    .map((d) => d.toJS() as K8sObject)
    .filter((o) => o && o.kind);

export function kustomizeLite(dir: string): K8sObject[] {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  let objects: K8sObject[] = [];
  for (const resource of k.resources ?? []) {
    const path = join(dir, resource);
    objects.push(...(statSync(path).isDirectory() ? kustomizeLite(path) : readDocs(path)));
  }
  for (const { path } of k.patches ?? []) {
    for (const patch of readDocs(join(dir, path))) {
      const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (i < 0) throw new Error(`patch ${path} matches no ${patch.kind} ${patch.metadata.name}`);
      objects[i] = merge(objects[i], patch) as K8sObject;
    }
  }
  for (const { pairs, includeSelectors } of k.labels ?? []) {
    if (includeSelectors) throw new Error('kustomize-lite: labels with includeSelectors are not supported');
    objects = objects.map((o) => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...pairs } } }));
  }
  for (const image of k.images ?? []) {
    for (const o of objects) {
      for (const c of o.spec?.template?.spec?.containers ?? []) {
        if (c.image === image.name) c.image = `${image.newName ?? image.name}${image.newTag ? `:${image.newTag}` : ''}`;
      }
    }
  }
  if (k.namespace) objects = objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace: k.namespace } }));
  return objects;
}
