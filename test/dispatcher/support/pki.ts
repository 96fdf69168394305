import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway CA and a server certificate it signed, for a receiver at localhost / 127.0.0.1. */
export interface TestPki {
  dir: string;
  /** The CA certificate file, for CALLBACK_CA_FILE. */
  caFile: string;
  caPem: string;
  cert: string;
  key: string;
  cleanup(): void;
}

export interface TestPkiOptions {
  /**
   * Key type of the CA and the server certificate: EC P-256 (the default, cheap handshakes for
   * tests) or 2048-bit RSA (what most receivers present; the benchmark uses it).
   */
  keyType?: 'ec' | 'rsa2048';
}

/** Made with the openssl CLI at test time so no key material lives in the repository. */
export function makeTestPki(extraDnsNames: string[] = [], options: TestPkiOptions = {}): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'callback-pki-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const newKey =
    options.keyType === 'rsa2048'
      ? ['-newkey', 'rsa:2048', '-nodes']
      : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...newKey, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=callback test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...newKey, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=localhost');
  writeFileSync(
    file('server.ext'),
    `subjectAltName=${['DNS:localhost', 'IP:127.0.0.1', ...extraDnsNames.map((n) => `DNS:${n}`)].join(',')}\n` +
      'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial',
    '-out', file('server.pem'), '-days', '2', '-extfile', file('server.ext'));
  return {
    dir,
    caFile: file('ca.pem'),
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    cert: readFileSync(file('server.pem'), 'utf8'),
    key: readFileSync(file('server.key'), 'utf8'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
