#!/usr/bin/env bash
# Builds the C peer into build/ and bin/ (both ignored by git). Idempotent; reproducible from
# pinned inputs: Debian 12 packages (versions recorded in capabilities) and HdrHistogram_c
# 0.11.1 from the npm package native-hdr-histogram@1.0.0, checked against its sha512 integrity.
set -euo pipefail
cd "$(dirname "$0")"

HDR_PACKAGE="native-hdr-histogram@1.0.0"
HDR_TARBALL="native-hdr-histogram-1.0.0.tgz"
HDR_INTEGRITY="sha512-m6rSY8FCsJpM6wQ68lcKymXEPWkVPsClzNcxHE5nAQsDK5gLycWQ1eHhBW2M9Hu1yBSuJTcqH1J09Sr44447qQ=="
HDR_C_VERSION="0.11.1"
APT_PACKAGES="build-essential cmake pkg-config libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev libzmq3-dev zlib1g-dev npm"

missing() {
    echo "build.sh: $1 is missing; install the build dependencies with:" >&2
    echo "  apt-get install $APT_PACKAGES" >&2
    exit 1
}

for tool in cc cmake pkg-config protoc-c npm tar sha512sum base64 perl dpkg-query; do
    command -v "$tool" >/dev/null 2>&1 || missing "$tool"
done
for module in grpc libprotobuf-c libngtcp2 libngtcp2_crypto_gnutls gnutls libzmq zlib; do
    pkg-config --exists "$module" || missing "the pkg-config module $module"
done

mkdir -p build/deps
DEPS="$(pwd)/build/deps"
HDR_SRC="$DEPS/HdrHistogram_c-$HDR_C_VERSION/src"
if [ ! -f "$HDR_SRC/.verified" ]; then
    if [ ! -f "$DEPS/$HDR_TARBALL" ]; then
        echo "build.sh: fetching $HDR_PACKAGE (HdrHistogram_c $HDR_C_VERSION sources) from npm" >&2
        npm pack --silent --pack-destination "$DEPS" "$HDR_PACKAGE" >/dev/null
    fi
    got="sha512-$(sha512sum "$DEPS/$HDR_TARBALL" | cut -d' ' -f1 | perl -ne 'chomp; print pack("H*", $_)' | base64 -w0)"
    if [ "$got" != "$HDR_INTEGRITY" ]; then
        echo "build.sh: $HDR_TARBALL has integrity $got, expected $HDR_INTEGRITY; refusing it" >&2
        rm -f "$DEPS/$HDR_TARBALL"
        exit 1
    fi
    rm -rf "$DEPS/HdrHistogram_c-$HDR_C_VERSION"
    mkdir -p "$DEPS/HdrHistogram_c-$HDR_C_VERSION"
    tar -xzf "$DEPS/$HDR_TARBALL" -C "$DEPS/HdrHistogram_c-$HDR_C_VERSION" --strip-components=2 \
        package/HdrHistogram_c/src package/HdrHistogram_c/LICENSE.txt package/HdrHistogram_c/COPYING.txt
    touch "$HDR_SRC/.verified"
fi

deb() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }
LIBS="libgrpc29=$(deb libgrpc29);libssl3=$(deb libssl3);libngtcp2-9=$(deb libngtcp2-9)"
LIBS="$LIBS;libngtcp2-crypto-gnutls2=$(deb libngtcp2-crypto-gnutls2);libgnutls30=$(deb libgnutls30)"
LIBS="$LIBS;libzmq5=$(deb libzmq5);libprotobuf-c1=$(deb libprotobuf-c1);HdrHistogram_c=$HDR_C_VERSION (npm $HDR_PACKAGE)"
{
    printf '#define PEER_BUILD_FLAGS "%s"\n' "-O2 -std=gnu11 -ffile-prefix-map (CMake Release)"
    printf '#define PEER_LIB_VERSIONS "%s"\n' "$LIBS"
} > build/peer_build.h.new
cmp -s build/peer_build.h.new build/peer_build.h 2>/dev/null || mv build/peer_build.h.new build/peer_build.h
rm -f build/peer_build.h.new

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHDR_SOURCE_DIR="$HDR_SRC" >/dev/null
cmake --build build -j "$(nproc)"
mkdir -p bin
install -m 0755 build/rpcarena-peer-c bin/rpcarena-peer-c
echo "build.sh: built $(pwd)/bin/rpcarena-peer-c" >&2
