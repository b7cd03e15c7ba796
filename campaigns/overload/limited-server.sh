#!/bin/sh
# Starts the Rust peer inside the cgroup that run.sh prepared, so the server gets a fixed share of
# one CPU (cgroup v1 cpu controller, CFS quota) and saturates at a rate the client can easily
# offer. Used only by the overload experiment; see docs/methodology.md.
# The peer protocol is stdin/stdout only, so the wrapper just joins the cgroup and execs.
set -eu
group=${RPCARENA_OVERLOAD_CGROUP:-/sys/fs/cgroup/cpu/rpcarena-overload}
if [ "${1:-}" = server ]; then
  if [ ! -w "$group/tasks" ]; then
    echo "limited-server.sh: $group is missing: run campaigns/overload/run.sh, which creates it" >&2
    exit 1
  fi
  echo $$ > "$group/tasks"
fi
here=$(dirname "$0")
peer=${RPCARENA_PEER:-$here/../../target/release/rpcarena-peer-rust}
exec "$peer" "$@"
