#!/usr/bin/env bash
# Builds the C++ peer into bin/rpcarena-peer-cpp (and its unit tests into build/).
#
# Idempotent: a second run only rebuilds what changed. Reproducible from pinned inputs: Debian 12's
# packages (versions checked below) and HdrHistogram_c's sources from the npm package
# native-hdr-histogram@1.0.0, verified against its registry integrity hash before use. Nothing
# fetched is committed; everything lands in deps/, build/ and bin/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

# --- Tools and Debian packages -------------------------------------------------------------
apt_packages="cmake g++ pkg-config protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev nlohmann-json3-dev zlib1g-dev libgtest-dev libzmq3-dev cppzmq-dev npm"
missing() {
  echo "build.sh: $1 is missing. Install the build dependencies with:" >&2
  echo "  apt-get install $apt_packages openssl" >&2
  exit 1
}
for tool in cmake g++ pkg-config protoc grpc_cpp_plugin npm tar base64 openssl; do
  command -v "$tool" >/dev/null 2>&1 || missing "$tool"
done
for module in grpc++ protobuf libngtcp2 libngtcp2_crypto_gnutls gnutls zlib nlohmann_json libzmq cppzmq; do
  pkg-config --exists "$module" || missing "the pkg-config module $module"
done
[ -f /usr/include/gtest/gtest.h ] || missing "GoogleTest (libgtest-dev)"
# The versions this peer is written and tested against (ngtcp2's pre-1.0 API changes between
# minor versions, so another one is refused rather than half-working).
want() {
  local got
  got=$(pkg-config --modversion "$1")
  if [ "$got" != "$2" ]; then
    echo "build.sh: $1 is $got; this peer is written for $2 (Debian 12). Install Debian 12's package." >&2
    exit 1
  fi
}
want grpc++ 1.51.1
want libngtcp2 0.12.1
want libngtcp2_crypto_gnutls 0.12.1
want libzmq 4.3.4
want cppzmq 4.9.0

# --- HdrHistogram_c from a pinned registry package --------------------------------------------
hdr_package="native-hdr-histogram@1.0.0"
hdr_tarball="native-hdr-histogram-1.0.0.tgz"
hdr_integrity="sha512-m6rSY8FCsJpM6wQ68lcKymXEPWkVPsClzNcxHE5nAQsDK5gLycWQ1eHhBW2M9Hu1yBSuJTcqH1J09Sr44447qQ=="
hdr_dir="$here/deps/HdrHistogram_c"
mkdir -p deps
if [ ! -f "$hdr_dir/.verified" ] || [ "$(cat "$hdr_dir/.verified")" != "$hdr_integrity" ]; then
  rm -rf "$hdr_dir" "deps/$hdr_tarball"
  echo "build.sh: fetching $hdr_package (HdrHistogram_c sources) from the npm registry" >&2
  (cd deps && npm pack "$hdr_package" --silent >/dev/null)
  got="sha512-$(openssl dgst -sha512 -binary "deps/$hdr_tarball" | base64 -w0)"
  if [ "$got" != "$hdr_integrity" ]; then
    echo "build.sh: $hdr_tarball has integrity $got, expected $hdr_integrity; refusing to build with it" >&2
    exit 1
  fi
  mkdir -p "$hdr_dir"
  tar -xzf "deps/$hdr_tarball" -C "$hdr_dir" --strip-components=2 package/HdrHistogram_c
  echo "$hdr_integrity" >"$hdr_dir/.verified"
  rm -f "deps/$hdr_tarball"
fi

# --- Configure, build, test binary in place -------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHDR_SOURCE_DIR="$hdr_dir/src" >/dev/null
cmake --build build -j "$jobs"
mkdir -p bin
# Replace the binary atomically: a campaign may be running the old one.
install -m 0755 build/rpcarena-peer-cpp bin/.rpcarena-peer-cpp.new
mv -f bin/.rpcarena-peer-cpp.new bin/rpcarena-peer-cpp
echo "build.sh: built $here/bin/rpcarena-peer-cpp (tests: ctest --test-dir $here/build)" >&2
