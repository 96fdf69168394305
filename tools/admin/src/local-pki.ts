import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where a throwaway CA and the loopback server certificate it signed are kept (PEM files). */
export interface LoopbackPkiFiles {
  dir: string;
  /** The CA certificate: what the dispatcher's `CALLBACK_CA_FILE` points at. */
  caFile: string;
  certFile: string;
  keyFile: string;
}

export interface LoopbackPkiOptions {
  /** Validity of both certificates. */
  days: number;
  /**
   * EC P-256 (the default: cheap handshakes) or 2048-bit RSA (what most real receivers present;
   * the benchmark uses it).
   */
  keyType?: 'ec' | 'rsa2048';
  /** Names the server certificate covers besides `localhost` and `127.0.0.1`. */
  extraDnsNames?: string[];
}

export const loopbackPkiFiles = (dir: string): LoopbackPkiFiles => ({
  dir,
  caFile: join(dir, 'ca.pem'),
  certFile: join(dir, 'server.pem'),
  keyFile: join(dir, 'server.key'),
});

/**
 * Makes a CA and a server certificate for `localhost` / `127.0.0.1` with the openssl CLI, so that
 * no key material lives in the repository. The CA's key is deleted once it has signed: nothing
 * else can ever be issued under a CA that a dispatcher was told to trust.
 */
export function writeLoopbackPki(dir: string, options: LoopbackPkiOptions): LoopbackPkiFiles {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = loopbackPkiFiles(dir);
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const days = String(options.days);
  const newKey = options.keyType === 'rsa2048' ? ['-newkey', 'rsa:2048', '-nodes'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...newKey,
    '-keyout',
    file('ca.key'),
    '-out',
    files.caFile,
    '-days',
    days,
    '-subj',
    '/CN=callback test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  openssl('req', ...newKey, '-keyout', files.keyFile, '-out', file('server.csr'), '-subj', '/CN=localhost');
  writeFileSync(
    file('server.ext'),
    `subjectAltName=${['DNS:localhost', 'IP:127.0.0.1', ...(options.extraDnsNames ?? []).map((n) => `DNS:${n}`)].join(',')}\n` +
      'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    files.caFile,
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    files.certFile,
    '-days',
    days,
    '-extfile',
    file('server.ext'),
  );
  for (const name of ['ca.key', 'ca.srl', 'server.csr', 'server.ext']) rmSync(file(name), { force: true });
  return files;
}

/**
 * The loopback certificates in `dir`, made on first use and made again when the server
 * certificate is missing or has less than a day left.
 */
export function ensureLoopbackPki(dir: string, options: LoopbackPkiOptions): { files: LoopbackPkiFiles; created: boolean } {
  const files = loopbackPkiFiles(dir);
  const present = [files.caFile, files.certFile, files.keyFile].every((f) => existsSync(f));
  const fresh = present && spawnSync('openssl', ['x509', '-checkend', '86400', '-noout', '-in', files.certFile]).status === 0;
  if (fresh) return { files, created: false };
  return { files: writeLoopbackPki(dir, options), created: true };
}
