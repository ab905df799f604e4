#!/bin/sh
# Regenerates the TLS fixtures of test/api/client-tls.test.ts (openssl, valid 100 years).
# ca: the cluster's CA; server: 127.0.0.1 and localhost; client: CN=root, signed by ca;
# foreign-ca and foreign-client: a CA the cluster does not trust, and a client it signed.
set -eu
cd "$(dirname "$0")"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 36500 -out "$1.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() { # name cn ca ext
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
leaf foreign-client root foreign-ca 'extendedKeyUsage=clientAuth'
