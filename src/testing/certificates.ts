import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A PEM certificate and its key, written to files in a cluster's data folder. */
export interface IssuedCertificate {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

// A distinguished-name value may not hold the separators of openssl's -subj syntax unescaped.
function subjectValue(value: string): string {
  return value.replace(/[\\/=+,]/g, (char) => `\\${char}`);
}

const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Makes a self-signed CA in `dir` named `<name>.crt` / `<name>.key`. */
export function createCertificateAuthority(dir: string, name: string): IssuedCertificate {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  openssl(
    ['req', '-x509', ...ecKey, '-keyout', keyPath, '-out', certPath, '-days', '3650', '-subj', `/CN=${name}`],
    dir,
  );
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, 'utf8'),
    keyPem: readFileSync(keyPath, 'utf8'),
  };
}

/** What a certificate that a CA signs is for. */
export type CertificateUsage =
  | { kind: 'server'; dnsNames: string[]; ipAddresses: string[] }
  | { kind: 'client'; commonName: string; organizations: string[] };

/** Issues a certificate signed by `ca`, written to `dir` as `<fileName>.crt` / `<fileName>.key`. */
export function issueCertificate(
  dir: string,
  fileName: string,
  ca: IssuedCertificate,
  usage: CertificateUsage,
): IssuedCertificate {
  const certPath = join(dir, `${fileName}.crt`);
  const keyPath = join(dir, `${fileName}.key`);
  const csrPath = join(dir, `${fileName}.csr`);
  const extPath = join(dir, `${fileName}.ext`);
  const subject =
    usage.kind === 'server'
      ? `/CN=${usage.dnsNames[0] ?? 'localhost'}`
      : `/CN=${subjectValue(usage.commonName)}${usage.organizations.map((org) => `/O=${subjectValue(org)}`).join('')}`;
  const extensions =
    usage.kind === 'server'
      ? [
          `subjectAltName=${[...usage.dnsNames.map((dns) => `DNS:${dns}`), ...usage.ipAddresses.map((ip) => `IP:${ip}`)].join(',')}`,
          'extendedKeyUsage=serverAuth',
        ]
      : ['extendedKeyUsage=clientAuth'];
  writeFileSync(extPath, `${extensions.join('\n')}\n`);
  openssl(['req', ...ecKey, '-keyout', keyPath, '-out', csrPath, '-subj', subject], dir);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      csrPath,
      '-CA',
      ca.certPath,
      '-CAkey',
      ca.keyPath,
      // A random serial instead of a serial file, so processes sharing a cluster can issue at the same time.
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      '3650',
      '-out',
      certPath,
      '-extfile',
      extPath,
    ],
    dir,
  );
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, 'utf8'),
    keyPem: readFileSync(keyPath, 'utf8'),
  };
}

/** Makes an EC key pair for signing service-account tokens. */
export function createSigningKeyPair(dir: string): { privateKeyPath: string; publicKeyPath: string } {
  const privateKeyPath = join(dir, 'service-account.key');
  const publicKeyPath = join(dir, 'service-account.pub');
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', privateKeyPath], dir);
  openssl(['ec', '-in', privateKeyPath, '-pubout', '-out', publicKeyPath], dir);
  return { privateKeyPath, publicKeyPath };
}
