#!/usr/bin/env bash
# Drives a peer's server through protocol 1.2's window commands on each stack named, with the
# peer's own client as the traffic (docs/peer-protocol.md "Lifecycle", "`window` (server, 1.2)"):
# WINDOW START is answered at once with a `window` event of edge start; the server goes on serving
# (a short unary sample runs against it); WINDOW END, WINDOW END and WINDOW START (any number, any
# order) are each answered at once with their edge and counters that never go backwards and that
# grew by exactly the client's calls; a client given WINDOW START while armed fails with `error`
# phase armed code protocol, exit 1; SHUTDOWN gives `stopped` with the counters so far, exit 0.
# Shared by the C and C++ peers. Usage: server_window.sh PEER STACK...
set -euo pipefail
peer=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap '[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"
. "$here/certs.sh"
trap '' PIPE # writes to a server that has exited fail instead of ending the script
passed=0
failed=0
check() { # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $what" >&2; failed=$((failed + 1)); fi
}
# Waits (2 s at most) until FILE has N lines.
wait_lines() {
  for _ in $(seq 1 200); do
    [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.01
  done
  return 1
}
# A counter of an event line (-1 when it has none): field NAME LINE.
field() {
  local v
  v=$(grep -o "\"$1\":\"[0-9]*\"" <<<"$2" | head -n 1 | cut -d'"' -f4)
  echo "${v:--1}"
}
# The peer's client against ADDRESS on STACK, fed by stdin; events to c.out.
client() {
  "$peer" client --stack "$1" --server "$2" --server-name 127.0.0.1 --ca ca.pem --shape unary \
    --concurrency 2 --request-size 64 --response-size 64 --messages-per-stream 4 --load closed \
    --warmup-ms 0 --window-ms 200 --drain-ms 1000 >c.out 2>>c.err
}
# Feeds a client START once armed and SHUTDOWN after its sample (or WINDOW START once armed).
feed() {
  for _ in $(seq 1 3000); do grep -q '"armed"' c.out 2>/dev/null && break; sleep 0.01; done
  echo "$1"
  [ "$1" = START ] || return 0
  for _ in $(seq 1 3000); do grep -q '"sample"' c.out 2>/dev/null && break; sleep 0.01; done
  echo SHUTDOWN
}
# Sends COMMAND to the server and checks that the next line is a `window` event of EDGE, within
# 1 s; sets `answer` to it.
window() {
  local n=$(($(wc -l <out) + 1)) began ms
  began=$(date +%s%N)
  echo "$1" >&3 || true # a server that exited is caught by the checks
  wait_lines out "$n" || true
  answer=$(sed -n "${n}p" out)
  ms=$((($(date +%s%N) - began) / 1000000))
  echo "$stack: $1 answered in $ms ms: $answer"
  check "$stack: $1 answered by a window event of edge $2" \
    grep -q "^{\"protocol\":1,\"event\":\"window\",\"edge\":\"$2\",\"counters\":{" <<<"$answer"
  check "$stack: $1 answered within 1 s" test "$ms" -lt 1000
}
# Checks that no counter of LINE is smaller than in EARLIER.
not_backwards() {
  for name in rpcs requests responses rejected; do
    check "$stack: $name does not go backwards" test "$(field $name "$2")" -ge "$(field $name "$1")"
  done
}

for stack in "$@"; do
  rm -f in out
  mkfifo in
  "$peer" server --stack "$stack" --listen 127.0.0.1:0 --cert server.pem --key server.key <in >out 2>err &
  pid=$!
  exec 3>in
  wait_lines out 1 || true
  addr=$(grep -o '"address":"[^"]*"' out | cut -d'"' -f4)
  window "WINDOW START" start
  start=$answer
  if ! grep -q '"event":"window"' <<<"$answer" || ! kill -0 "$pid" 2>/dev/null; then
    echo "$stack: the server does not serve window commands; its other checks are skipped" >&2
    exec 3>&-
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
    continue
  fi
  rm -f c.out
  feed START | client "$stack" "$addr" || true
  sample=$(grep '"sample"' c.out || true)
  check "$stack: the server served a sample after WINDOW START" test -n "$sample"
  window "WINDOW END" end
  end=$answer
  calls=$(($(field completed "$sample") + 1)) # the validation operation, then the window's
  for name in rpcs requests responses; do
    check "$stack: $name grew by the client's $calls calls" \
      test $(($(field $name "$end") - $(field $name "$start"))) -eq "$calls"
  done
  check "$stack: rejected did not grow" test "$(field rejected "$end")" -eq "$(field rejected "$start")"
  window "WINDOW END" end
  not_backwards "$end" "$answer"
  again=$answer
  window "WINDOW START" start
  not_backwards "$again" "$answer"
  late=$answer
  rm -f c.out
  feed "WINDOW START" | client "$stack" "$addr" && code=0 || code=$?
  check "$stack: a client given WINDOW START while armed exits 1" test "$code" -eq 1
  check "$stack: ... after an error of phase armed, code protocol" \
    grep -q '"event":"error","phase":"armed","code":"protocol"' c.out
  n=$(($(wc -l <out) + 1))
  echo SHUTDOWN >&3 || true
  exec 3>&-
  wait "$pid" && code=0 || code=$?
  pid=
  check "$stack: the server exits 0 after SHUTDOWN" test "$code" -eq 0
  stopped=$(sed -n "${n}p" out)
  check "$stack: SHUTDOWN is answered by stopped" grep -q '"event":"stopped","counters":{' <<<"$stopped"
  not_backwards "$late" "$stopped"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
