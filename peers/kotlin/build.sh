#!/bin/sh
# Builds the Kotlin peer in this folder with Maven from the versions pinned in pom.xml:
# protoc (com.google.protobuf:protoc), protoc-gen-grpc-java and protoc-gen-grpc-kotlin from Maven
# Central generate the stubs from ../../proto, kotlinc compiles, and every runtime jar is copied to
# target/lib. bin/rpcarena-peer-kotlin runs the result. Idempotent; offline-safe once ~/.m2 holds
# the dependencies (Maven then resolves from it). Everything it writes (target/) is ignored by git.
set -eu
cd "$(dirname "$0")"

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "build.sh: $1 not found; install it with: $2" >&2
    exit 1
  fi
}
need java "apt-get install openjdk-17-jdk-headless (tested with OpenJDK 17.0.15)"
need mvn "apt-get install maven (tested with Apache Maven 3.8.7)"
major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ "${major:-0}" -lt 17 ] 2>/dev/null; then
  echo "build.sh: Java ${major:-unknown} is too old: this peer needs 17 or later (tested with 17.0.15)" >&2
  exit 1
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "build.sh: warning: pom.xml pins the linux-x86_64 native QUIC library; on $(uname -s)-$(uname -m) the quic stack will not load" >&2
fi
[ -f ../../proto/rpcarena/bench/v1/bench.proto ] || {
  echo "build.sh: ../../proto/rpcarena/bench/v1/bench.proto is missing; run build.sh from a checkout of the repository" >&2
  exit 1
}

# Offline when every dependency is already in the local repository, else online. The offline
# attempt's output (Maven prints its [ERROR] lines on stdout when ~/.m2 lacks something) is kept
# aside and shown only when the online attempt fails too. The Kotlin compiler runs in Maven's JVM
# (no compile daemon), so a build leaves no process behind.
offline_log=$(mktemp)
trap 'rm -f "$offline_log"' EXIT
if ! mvn -q -B -o -Dkotlin.compiler.daemon=false package >"$offline_log" 2>&1; then
  if ! mvn -q -B -Dkotlin.compiler.daemon=false package; then
    echo "build.sh: the online build failed (above); the offline attempt before it (mvn -o) said:" >&2
    cat "$offline_log" >&2
    exit 1
  fi
fi
echo "build.sh: built $(pwd) with $(java -version 2>&1 | head -1)" >&2
