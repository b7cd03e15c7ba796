#!/usr/bin/env bash
# Builds the Go peer into bin/rpcarena-peer-go, reproducibly from go.mod and go.sum:
#   1. the protobuf plugins protoc-gen-go and protoc-gen-go-grpc (pinned in go.mod as tools);
#   2. internal/benchpb from proto/rpcarena/bench/v1/bench.proto, compiled in pure Go by
#      tools/protogen (protocompile), no protoc (generated code is never committed);
#   3. the peer, statically linked (CGO_ENABLED=0), with -trimpath.
# Idempotent; output goes to bin/, build/ and internal/benchpb/ (ignored by git). Tests: test.sh.
set -euo pipefail
cd "$(dirname "$0")"

fail() { echo "peers/go/build.sh: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 ||
  fail "the go command is missing; install Go 1.26 or newer (tested with go1.26.8) and put it on PATH (Debian 12's golang-go is 1.19, too old)"
version=$(go env GOVERSION)
minor=$(echo "$version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
[[ -n "$minor" && "$minor" -ge 26 ]] ||
  fail "Go 1.26 or newer is needed (tested with go1.26.8), found $version"
[[ -f ../../proto/rpcarena/bench/v1/bench.proto ]] ||
  fail "../../proto/rpcarena/bench/v1/bench.proto is missing; run build.sh from a checkout of the repository"

# Only what go.mod and go.sum pin (the go command checks every module it downloads against
# go.sum); never switch toolchains; no libc dependency.
export GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0

mkdir -p build/tools bin
go build -trimpath -o build/tools/ \
  google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc

rm -rf internal/benchpb
go run -trimpath ./tools/protogen \
  -proto-root ../../proto -file rpcarena/bench/v1/bench.proto \
  -go-package rpcarena/peers/go/internal/benchpb -out internal/benchpb \
  -plugin build/tools/protoc-gen-go -plugin build/tools/protoc-gen-go-grpc

go build -trimpath -buildvcs=false -o bin/rpcarena-peer-go ./cmd/rpcarena-peer-go
echo "peers/go/build.sh: built bin/rpcarena-peer-go ($version)"
