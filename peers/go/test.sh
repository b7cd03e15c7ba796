#!/usr/bin/env bash
# Unit tests of the Go peer: go vet and go test over every package. The generated protobuf
# package comes from build.sh, which runs first when it is missing. The interop campaigns with
# the Rust peer are in test/ (see README.md).
set -euo pipefail
cd "$(dirname "$0")"
[[ -f internal/benchpb/bench.pb.go ]] || ./build.sh
export GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0
go vet ./...
go test -count=1 ./...
