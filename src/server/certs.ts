// X.509 certificates made on the spot: the self-signed ones of `--auto-tls` and `--peer-auto-tls`
// (auto-tls.ts) and the throwaway CA of `tenure up --tls`. Keys are ECDSA P-256 made by Node's
// WebCrypto; certificates are built and signed by @peculiar/x509 (no hand-built ASN.1). Its
// dependency injection (tsyringe) needs the Reflect metadata polyfill loaded first: this module
// is imported lazily, by the starts that need a certificate, so nothing else pays for either.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

x509.cryptoProvider.set(webcrypto);

/** ECDSA P-256 with SHA-256: what every TLS stack here (Node, grpc-go's etcdctl) accepts. */
const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** Bytes of a random serial number (RFC 5280 section 4.1.2.2: positive, at most 20 octets). */
const SERIAL_BYTES = 16;
const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * How far back a certificate's notBefore is set, in ms, so that a peer whose clock is a little
 * behind ours does not refuse it as not yet valid.
 */
const NOT_BEFORE_SLACK_MS = 60 * 60 * 1000;

export type KeyPurpose = 'serverAuth' | 'clientAuth';

/** A certificate and its private key, both PEM (the key PKCS #8, unencrypted). */
export interface Issued {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertificateAuthority extends Issued {
  readonly cert: x509.X509Certificate;
  readonly keys: webcrypto.CryptoKeyPair;
  readonly name: string;
}

export interface LeafSpec {
  /** The subject's CN (etcd takes a client certificate's CN as the user name). */
  readonly commonName: string;
  /** IP addresses and DNS names for the subjectAltName; none for a client certificate. */
  readonly hosts: readonly string[];
  readonly purposes: readonly KeyPurpose[];
  readonly validityDays: number;
}

function serial(): string {
  const b = randomBytes(SERIAL_BYTES);
  b[0] = (b[0] as number) & 0x7f; // positive
  return b.toString('hex');
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return {
    notBefore: new Date(now - NOT_BEFORE_SLACK_MS),
    notAfter: new Date(now + days * DAY_MS),
  };
}

/** Quote a value for an RFC 4514 distinguished name. */
function dnValue(v: string): string {
  return v.replace(/([,+"\\<>;=#])/g, '\\$1');
}

function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
}

async function keyPem(keys: webcrypto.CryptoKeyPair): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** The extensions of a leaf: not a CA, the key usages TLS needs, EKUs, SANs. */
async function leafExtensions(
  spec: LeafSpec,
  keys: webcrypto.CryptoKeyPair,
): Promise<x509.Extension[]> {
  const purposes = spec.purposes.map((p) =>
    p === 'serverAuth' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
  );
  const exts: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(purposes),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  if (spec.hosts.length > 0)
    exts.push(
      new x509.SubjectAlternativeNameExtension(
        spec.hosts.map((h) =>
          isIP(h) === 0 ? { type: 'dns', value: h } : { type: 'ip', value: h },
        ),
      ),
    );
  return exts;
}

/** A self-signed CA certificate (RFC 5280 section 4.2.1.9: CA, allowed to sign certificates). */
export async function makeCa(
  commonName: string,
  validityDays: number,
): Promise<CertificateAuthority> {
  const keys = await newKeys();
  const name = `CN=${dnValue(commonName)}`;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name,
    ...validity(validityDays),
    keys,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, name, certPem: cert.toString('pem'), keyPem: await keyPem(keys) };
}

/** A leaf certificate signed by `ca`. */
export async function issue(ca: CertificateAuthority, spec: LeafSpec): Promise<Issued> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${dnValue(spec.commonName)}`,
    issuer: ca.name,
    ...validity(spec.validityDays),
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      ...(await leafExtensions(spec, keys)),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await keyPem(keys) };
}

/** A self-signed leaf certificate (etcd's SelfCert, pkg/transport/listener.go). */
export async function selfSigned(spec: LeafSpec): Promise<Issued> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${dnValue(spec.commonName)}`,
    ...validity(spec.validityDays),
    keys,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: await leafExtensions(spec, keys),
  });
  return { certPem: cert.toString('pem'), keyPem: await keyPem(keys) };
}
