#!/usr/bin/env bash
# Soak test of the controller (not in CI): runs one campaign for about an hour and samples the
# controller's open file descriptors, threads and resident memory, and the host's rpa-*
# namespaces, every INTERVAL seconds; then checks that they stayed flat.
#
#   scripts/soak.sh [SECONDS] [CAMPAIGN]        defaults: 3600, a built-in loopback campaign
#
# Needs release builds of `rpcarena` and `rpcarena-peer-rust` (cargo build --release -p rpcarena
# -p rpcarena-peer-rust) and takes the measurement lock, because it measures. Writes
# soak-<time>/ with the run directory and readings.csv. Exit 0: flat; 1: something grew;
# 2: the set-up failed.
#
# Flat means: file descriptors and threads in the last quarter of the readings at most 2 above
# their maximum in the first quarter, RSS at most 20% above it, and no namespace left once the
# run is over. Leaks show as steps that never come back down, so maxima are compared, not
# single readings.
set -euo pipefail

duration=${1:-3600}
campaign=${2:-}
interval=${INTERVAL:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${RPCARENA:-$root/target/release/rpcarena}
peer=${PEER:-$root/target/release/rpcarena-peer-rust}
out=${OUT:-$root/soak-$(date -u +%Y%m%dT%H%M%SZ)}

for f in "$bin" "$peer"; do
    [[ -x $f ]] || { echo "soak: $f is missing: cargo build --release -p rpcarena -p rpcarena-peer-rust" >&2; exit 2; }
done
mkdir -p "$out"

if [[ -z $campaign ]]; then
    # Enough short samples to last `duration`: about 1.6 s each (window, warmup, start-up).
    reps=$(( duration / (12 * 2) + 1 ))
    (( reps > 1000 )) && reps=1000
    campaign=$out/soak.toml
    cat > "$campaign" <<TOML
name = "soak"
seed = 1
repetitions = $reps
max_samples = 1000000
network = "loopback"
[[peers]]
id = "rust"
command = ["$peer"]
[[cells]]
id = "rust-grpc"
client = "rust"
server = "rust"
stack = "grpc"
[[cells]]
id = "rust-quic"
client = "rust"
server = "rust"
stack = "quic"
[[cells]]
id = "rust-tcp"
client = "rust"
server = "rust"
stack = "tcp"
[workload]
shapes = ["unary", "client_stream", "server_stream", "bidi"]
concurrency = [4]
messages_per_stream = 16
[timing]
warmup = "200ms"
window = "1s"
drain = "2s"
[noise]
max_load = 0
TOML
fi

readings=$out/readings.csv
echo "elapsed_s,fds,threads,rss_kib,namespaces" > "$readings"

flock /tmp/rpcarena-measure.lock "$bin" run "$campaign" --out "$out/run" > "$out/run.log" 2>&1 &
wrapper=$!
# The controller is flock's child, once the lock is ours (other measurements may hold it).
pid=
while kill -0 "$wrapper" 2>/dev/null; do
    pid=$(pgrep -P "$wrapper" -x rpcarena || true)
    [[ -n $pid ]] && break
    sleep 0.5
done
[[ -n $pid ]] || { echo "soak: the controller did not start; see $out/run.log" >&2; exit 2; }

start=$(date +%s)
stopped=0
while kill -0 "$pid" 2>/dev/null; do
    now=$(date +%s)
    elapsed=$(( now - start ))
    if (( elapsed >= duration && stopped == 0 )); then
        kill -INT "$pid"   # stops cleanly: the sample in progress is recorded, reports written
        stopped=1
    fi
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || break
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
    ns=$(ip netns list 2>/dev/null | grep -c '^rpa-' || true)
    [[ -n $threads && -n $rss ]] && echo "$elapsed,$fds,$threads,$rss,$ns" >> "$readings"
    sleep "$interval"
done
wait "$wrapper" || true
left=$(ip netns list 2>/dev/null | grep -c '^rpa-' || true)

python3 - "$readings" "$left" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
left = int(sys.argv[2])
if len(rows) < 8:
    print(f"soak: only {len(rows)} readings; run longer"); sys.exit(2)
q = len(rows) // 4
first, last = rows[:q], rows[-q:]
bad = []
for name, slack in (("fds", 2), ("threads", 2)):
    a = max(int(r[name]) for r in first); b = max(int(r[name]) for r in last)
    print(f"{name}: first quarter max {a}, last quarter max {b}")
    if b > a + slack: bad.append(name)
a = max(int(r["rss_kib"]) for r in first); b = max(int(r["rss_kib"]) for r in last)
print(f"rss_kib: first quarter max {a}, last quarter max {b} ({100 * (b - a) / a:+.1f}%)")
if b > a * 1.2: bad.append("rss")
print(f"namespaces left after the run: {left}")
if left: bad.append("namespaces")
print(f"{len(rows)} readings over {rows[-1]['elapsed_s']} s")
if bad:
    print("soak: NOT flat: " + ", ".join(bad)); sys.exit(1)
print("soak: flat")
PY
