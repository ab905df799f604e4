// TLS for the client's channels: PEM material (or the paths of PEM files) turned into grpc-js
// channel credentials once per client, and the rule deciding which endpoints use them.
//
// Which endpoints speak TLS follows clientv3 3.4 (clientv3/client.go, dialWithBalancerCreds and
// processCreds): `https://host:port` always does (with the system's roots when no CA is given),
// `http://host:port` never does, and a bare `host:port` does exactly when `tls` was given.
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

export interface TlsOptions {
  /** PEM of the CA(s) to trust for the servers' certificates; default: the system's roots. */
  readonly ca?: string | Buffer;
  /** PEM of this client's certificate chain, for servers that ask for one (--client-cert-auth). */
  readonly cert?: string | Buffer;
  /** PEM of the private key of `cert`. */
  readonly key?: string | Buffer;
  /** Paths of PEM files, read once when the client is made, instead of `ca`, `cert`, `key`. */
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
  /**
   * The name the server's certificate must carry (and the TLS SNI), instead of each endpoint's
   * host, as Go's tls.Config.ServerName.
   */
  readonly serverName?: string;
}

export type EndpointScheme = 'http' | 'https' | undefined;

/** The credentials of a client's channels, secure and plain. */
export class ChannelSecurity {
  /** False when `tls` was not given: bare endpoints are then plain text. */
  readonly #given: boolean;
  readonly #secure: grpc.ChannelCredentials;
  readonly #options: grpc.ChannelOptions;

  constructor(tls: TlsOptions | undefined) {
    this.#given = tls !== undefined;
    const t = tls ?? {};
    const ca = pem(t.ca, t.caFile, 'ca');
    const cert = pem(t.cert, t.certFile, 'cert');
    const key = pem(t.key, t.keyFile, 'key');
    if ((cert === undefined) !== (key === undefined)) {
      throw new TypeError('tenure/client: tls needs both cert and key (or neither)');
    }
    // createSsl(null, ...) trusts Node's bundled roots (tls.rootCertificates).
    this.#secure = grpc.credentials.createSsl(ca ?? null, key ?? null, cert ?? null);
    this.#options =
      t.serverName === undefined ? {} : { 'grpc.ssl_target_name_override': t.serverName };
  }

  /** Whether an endpoint given with `scheme` (undefined: bare `host:port`) speaks TLS. */
  secure(scheme: EndpointScheme): boolean {
    return scheme === undefined ? this.#given : scheme === 'https';
  }

  credentials(secure: boolean): grpc.ChannelCredentials {
    return secure ? this.#secure : grpc.credentials.createInsecure();
  }

  /** Channel options of a secure channel (the server name override). */
  channelOptions(secure: boolean): grpc.ChannelOptions {
    return secure ? this.#options : {};
  }
}

function pem(
  inline: string | Buffer | undefined,
  file: string | undefined,
  what: string,
): Buffer | undefined {
  if (inline !== undefined && file !== undefined) {
    throw new TypeError(`tenure/client: tls.${what} and tls.${what}File are both given`);
  }
  if (inline !== undefined) return Buffer.isBuffer(inline) ? inline : Buffer.from(inline);
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (e) {
    throw new TypeError(
      `tenure/client: cannot read tls.${what}File ${file}: ${(e as Error).message}`,
      { cause: e },
    );
  }
}
