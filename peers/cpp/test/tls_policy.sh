#!/usr/bin/env bash
# Checks on the wire what src/grpc_tuning.cc's TLS policy makes of gRPC 1.51's server: TLS 1.3
# with X25519 and ALPN h2 succeeds and negotiates AES-256-GCM; P-256 only, or TLS 1.2, is refused;
# no session ticket is sent. (The quic stack's GnuTLS priorities cannot be probed with s_client,
# which speaks no QUIC; they are set by one string in src/quic_common.h.) Usage: tls_policy.sh PEER
set -euo pipefail
peer=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cd "$dir"
. "$here/certs.sh"
mkfifo in
"$peer" server --stack grpc --listen 127.0.0.1:0 --cert server.pem --key server.key <in >out 2>err &
pid=$!
exec 3>in
for _ in $(seq 1 100); do grep -q address out 2>/dev/null && break; sleep 0.1; done
addr=$(grep -o '"address":"[^"]*"' out | cut -d'"' -f4)
probe() { echo Q | timeout 10 openssl s_client -connect "$addr" -alpn h2 -CAfile ca.pem -msg "$@" 2>&1 || true; }
fail=0
ok=$(probe -groups X25519)
echo "$ok" | grep -q 'New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384' || { echo "FAIL: X25519 + TLS 1.3 did not negotiate AES-256-GCM"; fail=1; }
echo "$ok" | grep -q 'ALPN protocol: h2' || { echo "FAIL: no ALPN h2"; fail=1; }
echo "$ok" | grep -qi 'NewSessionTicket' && { echo "FAIL: the server sent a session ticket"; fail=1; }
probe -groups P-256 | grep -q 'Cipher is (NONE)' || { echo "FAIL: P-256 only was accepted"; fail=1; }
probe -tls1_2 | grep -q 'Cipher is (NONE)' || { echo "FAIL: TLS 1.2 was accepted"; fail=1; }
echo SHUTDOWN >&3
wait "$pid" || true
pid=
[ $fail -eq 0 ] && echo "1 passed, 0 failed" || { echo "0 passed, 1 failed"; exit 1; }
