#!/bin/sh
# Builds the JavaScript peer in this folder: installs the exact dependencies of
# package-lock.json (npm ci; @matrixai/quic ships quiche compiled in @matrixai/quic-linux-x64)
# and generates build/bench.json from the repository's proto/. Idempotent; everything it writes
# (node_modules/, build/) is ignored by git.
set -eu
cd "$(dirname "$0")"

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "build.sh: $1 not found; install it with: $2" >&2
    exit 1
  fi
}
need node "Node.js 20.11 or later with npm, e.g. from NodeSource (tested with v20.20.2 and npm 11; Debian 12's nodejs 18 is too old)"
need npm "apt-get install npm"
major=$(node -p 'process.versions.node.split(".")[0]')
minor=$(node -p 'process.versions.node.split(".")[1]')
if [ "$major" -lt 20 ] || { [ "$major" -eq 20 ] && [ "$minor" -lt 11 ]; }; then
  echo "build.sh: Node.js $(node --version) is too old: this peer needs 20.11 or later (tested with v20.20.2)" >&2
  exit 1
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "build.sh: warning: package-lock.json pins @matrixai/quic-linux-x64; on $(uname -s)-$(uname -m) the quic stack has no native library" >&2
fi

npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node scripts/gen-proto.js
echo "build.sh: built $(pwd) with node $(node --version)" >&2
