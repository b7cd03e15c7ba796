// Everything that sets gRPC C++ 1.51 up as docs/stacks.md asks, in one place for both roles:
// channel arguments, the TCP socket mutator (TCP_NODELAY, TCP_CONGESTION cubic) and the TLS policy
// (TLS 1.3 only, X25519 only, no session tickets), and what of it gRPC 1.51 cannot set.
#pragma once

#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

namespace rpcarena {

inline constexpr int kGrpcWindow = 16 * 1024 * 1024;
inline constexpr int kGrpcMaxStreams = 10000;

// Client channel arguments (windows, BDP probing, message limits, one subchannel, the mutator,
// the TLS name override for --server-name).
grpc::ChannelArguments grpc_client_arguments(const std::string& server_name);
// The same settings for a ServerBuilder.
void grpc_configure_server(grpc::ServerBuilder& builder);

// Installs the TLS policy (see grpc_tuning.cc); idempotent. Returns a description for stderr.
void grpc_install_tls_policy();

// What capabilities declare for the grpc stack.
struct GrpcDeclared {
  std::string congestion;               // "cubic" or "host default"
  std::vector<std::string> deviations;  // one sentence each
};
GrpcDeclared grpc_declared();

}  // namespace rpcarena
