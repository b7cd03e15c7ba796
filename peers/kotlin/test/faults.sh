#!/usr/bin/env bash
# The validation duties of the Kotlin peer against the Rust peer's conformance faults
# (crates/peer/src/fault.rs), on both stacks, until `rpcarena conformance` covers them:
#   client: a Rust server misbehaving in one way per run; the Kotlin client must fail its
#           validation operation (phase validate) with the code fault.rs gives;
#   server: a Rust client sending one malformed call per run; the Kotlin server must answer
#           INVALID_ARGUMENT and keep serving (the Rust client then prints stopped, exit 0).
# Usage: test/faults.sh [PATH-TO-rpcarena-peer-rust]   (default: rpcarena-peer-rust on PATH)
# Loopback only; every process is bounded by timeout and ends with its stdin.
set -u
here=$(cd "$(dirname "$0")" && pwd)
K="$here/../bin/rpcarena-peer-kotlin"
R=${1:-rpcarena-peer-rust}
F="$here/../../javascript/test/fixtures"   # test PKI: ca.pem, ip.pem/ip.key (IP SAN 127.0.0.1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# serve STACK CMD [ARGS...]: starts a server reading its stdin from a fifo; sets ADDR.
serve() {
  local stack=$1 cmd=$2
  shift 2
  : >"$tmp/server.out"
  rm -f "$tmp/ctl"
  mkfifo "$tmp/ctl"
  timeout 60 "$cmd" server --stack "$stack" --listen 127.0.0.1:0 --cert "$F/ip.pem" --key "$F/ip.key" "$@" \
    <"$tmp/ctl" >"$tmp/server.out" 2>"$tmp/server.err" &
  SERVER=$!
  exec 4>"$tmp/ctl"
  for _ in $(seq 150); do grep -q '"ready"' "$tmp/server.out" && break; sleep 0.2; done
  ADDR=$(grep -o '"address":"[^"]*"' "$tmp/server.out" | cut -d'"' -f4)
}

# stop_server: SHUTDOWN, then waits for the server to exit.
stop_server() {
  echo SHUTDOWN >&4
  exec 4>&-
  wait "$SERVER" 2>/dev/null
}

check() {
  local what=$1 got=$2 want=$3
  if [[ "$got" == *"$want"* ]]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $what: expected $want, got: ${got:0:300}"
  fi
}

common=(--concurrency 1 --request-size 16 --response-size 16 --messages-per-stream 4 --load closed --warmup-ms 0 --window-ms 1000 --drain-ms 1000)

for stack in grpc quic; do
  for spec in "wrong-seq unary zeros invalid" "wrong-seq client_stream zeros invalid" "wrong-seq bidi zeros invalid" \
    "short-payload unary zeros invalid" "short-payload server_stream zeros invalid" "short-payload client_stream zeros invalid" \
    "nonzero-byte unary zeros invalid" "nonzero-byte bidi zeros invalid" \
    "wrong-summary client_stream zeros invalid" "wrong-summary unary zeros rpc" \
    "missing-message unary zeros invalid" "missing-message client_stream zeros invalid" "missing-message server_stream zeros invalid" "missing-message bidi zeros invalid" \
    "extra-message unary zeros invalid" "extra-message client_stream zeros invalid" "extra-message server_stream zeros invalid" "extra-message bidi zeros invalid" \
    "early-status unary zeros invalid" "early-status bidi zeros invalid" \
    "error-status unary zeros rpc" "error-status bidi zeros rpc" \
    "corrupt-structured unary structured invalid" "corrupt-structured server_stream structured invalid" "corrupt-structured unary zeros invalid"; do
    read -r mode shape payload code <<<"$spec"
    serve "$stack" "$R" --conformance-fault "$mode"
    out=$(timeout 40 "$K" client --stack "$stack" --server "$ADDR" --server-name 127.0.0.1 --ca "$F/ca.pem" \
      --shape "$shape" --payload "$payload" "${common[@]}" 2>>"$tmp/client.err" < <(sleep 30))
    stop_server
    check "client $stack $mode $shape $payload" "$out" "\"phase\":\"validate\",\"code\":\"$code\""
  done
  for spec in "nonzero-byte unary zeros" "nonzero-byte client_stream structured" "corrupt-structured unary structured" "corrupt-structured bidi structured" \
    "seq-order client_stream zeros" "seq-order bidi zeros" "length-change client_stream zeros" "length-change bidi structured" \
    "response-size-too-large unary zeros" "response-size-too-large server_stream structured" "response-messages-zero server_stream zeros" \
    "empty-stream client_stream zeros" "empty-stream bidi zeros"; do
    read -r mode shape payload <<<"$spec"
    serve "$stack" "$K"
    out=$(timeout 40 "$R" client --stack "$stack" --server "$ADDR" --server-name 127.0.0.1 --ca "$F/ca.pem" \
      --shape "$shape" --payload "$payload" "${common[@]}" --conformance-fault "$mode" 2>>"$tmp/client.err" < <(sleep 30))
    stop_server
    check "server $stack $mode $shape $payload" "$out" '"event":"stopped"'
  done
done
echo "faults: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
