#!/bin/sh
# The overload experiment of docs/methodology.md: closed against open loop on a server limited to
# a quarter of one CPU. Needs root and the cgroup v1 cpu controller (/sys/fs/cgroup/cpu); creates
# the cgroup, runs campaigns/overload.toml, and removes the cgroup whatever happens.
#   campaigns/overload/run.sh [--out DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
group=/sys/fs/cgroup/cpu/rpcarena-overload
quota_us=${QUOTA_US:-1000}
period_us=${PERIOD_US:-4000}
if [ ! -d /sys/fs/cgroup/cpu ]; then
  echo "run.sh: no cgroup v1 cpu controller at /sys/fs/cgroup/cpu; this experiment needs it" >&2
  exit 1
fi
mkdir -p "$group"
trap 'sleep 1; rmdir "$group" 2>/dev/null || echo "run.sh: could not remove $group (still in use?)" >&2' EXIT
echo "$period_us" > "$group/cpu.cfs_period_us"
echo "$quota_us" > "$group/cpu.cfs_quota_us"
"$root/target/release/rpcarena" run "$root/campaigns/overload.toml" "$@"
