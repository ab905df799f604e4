#!/bin/sh
# Makes the TLS fixtures of the tests (openssl, valid 100 years) that are missing, so that adding
# one leaves the others (and every test that pins them) as they are; rm *.crt *.key to re-key all.
# ca: the cluster's CA; server: 127.0.0.1 and localhost; client: CN=root and client-alice:
# CN=alice, signed by ca (CN-based auth, test/api/auth.test.ts);
# peer: a member's peer certificate (test/server/peer-tls.test.ts), IP SAN 127.0.0.1, served and
# presented as a client both (etcd uses one peer certificate both ways), signed by ca;
# foreign-ca, foreign-client and foreign-peer: a CA the cluster does not trust, and what it signed.
set -eu
cd "$(dirname "$0")"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
ca() {
  [ -e "$1.crt" ] && [ -e "$1.key" ] && return 0
  key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 36500 -out "$1.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # name cn ca ext
  [ -e "$1.crt" ] && [ -e "$1.key" ] && return 0
  key "$1"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial -days 36500 \
    -extfile "$1.ext" -out "$1.crt"
  rm -f "$1.csr" "$1.ext" "$3.srl"
}
ca ca 'tenure test CA'
ca foreign-ca 'foreign test CA'
leaf server 'tenure test server' ca \
  "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
leaf client root ca 'extendedKeyUsage=clientAuth'
leaf client-alice alice ca 'extendedKeyUsage=clientAuth'
leaf foreign-client root foreign-ca 'extendedKeyUsage=clientAuth'
leaf peer 'tenure test peer' ca \
  "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
leaf foreign-peer 'foreign test peer' foreign-ca \
  "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
