// What the two gRPC stacks (grpc's callback API, grpc-cq's completion queue and synchronous
// server) share, so their channels, listeners and error codes cannot drift apart (defined in
// grpc_client.cc and grpc_server.cc).
#pragma once

#include <functional>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "args.h"
#include "tally.h"

namespace rpcarena {

// One channel to --server with the grpc stack's credentials (TLS, or h2c with --tls off) and
// channel arguments (grpc_tuning.cc), connected: READY, handshake done. Throws Failure(phase
// connect, code tls/connect/timeout); returns nullptr when `stop()` became true meanwhile.
std::shared_ptr<grpc::Channel> open_grpc_channel(const ClientArgs& args,
                                                 const std::function<bool()>& stop);

// A call's non-OK status as an operation failure with its code (docs/peer-protocol.md "Error
// codes": UNAVAILABLE is the library's, tls or connect; DEADLINE_EXCEEDED timeout; else rpc).
OpResult grpc_status_failure(const grpc::Status& status);

// A started server of `service` on --listen with the grpc stack's credentials (TLS from --cert
// and --key, or h2c with --tls off) and settings (grpc_configure_server); `*address` is the
// address bound. Throws Failure(startup/config for the files, listen/config for the address).
std::unique_ptr<grpc::Server> grpc_listen(const ServerArgs& args, grpc::Service* service,
                                          std::string* address);

}  // namespace rpcarena
