// The `capabilities` event (docs/peer-protocol.md): what this peer offers per role, its build, the
// files it runs from, and per stack the libraries, the settings it really uses and the
// deviations from docs/stacks.md it cannot avoid.
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <climits>
#include <thread>

#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>

#include "build_info.h"
#include "client.h"
#include "events.h"
#include "grpc_tuning.h"
#include "quic_common.h"
#include "zmq_common.h"

namespace rpcarena {

namespace {

std::string executable_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("rpcarena-peer-cpp");
}

// Both servers answer each bidi request as soon as it is validated (grpc_server.cc BidiReactor,
// quic_server.cc ServerCall::on_message), which is all pingpong asks of a server
// (docs/peer-protocol.md "Shapes"); the clients do not drive it.
Json shapes(bool client) {
  Json all = Json::array({"unary", "client_stream", "server_stream", "bidi"});
  if (!client) all.push_back("pingpong");
  return all;
}
// 1.3: why a stack cannot carry a shape (args.cc refuses it with the same words).
Json not_offered(Stack stack, const std::vector<Shape>& shapes) {
  Json out = Json::object();
  for (Shape shape : shapes) out[name(shape)] = not_offered_reason(stack, shape);
  return out;
}
Json models() {
  return Json::array({"closed", "window", "backpressure", "send-saturation", "open"});
}
// Not `dated` (1.4): that procedure is JSON stacks' only. No entry lists client_modes either
// (absent: official only), as no stack here has a replay client; args.cc refuses both.
Json payloads() { return Json::array({"zeros", "structured"}); }

unsigned cpus() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

Json grpc_entry(bool client) {
  GrpcDeclared d = grpc_declared();
  Json libraries = Json::object();
  libraries["grpc++"] = grpc::Version();
  libraries["protobuf"] = google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);
  libraries["openssl"] = OpenSSL_version(OPENSSL_VERSION_STRING);
  Json settings = Json::object();
  settings["tls_versions"] = Json::array({"1.3"});
  settings["tls_groups"] = Json::array({"x25519"});
  settings["tls_ciphers"] = Json::array(
      {"TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"});
  settings["tls_resumption"] = false;
  settings["alpn"] = "h2";
  settings["stream_window"] = kGrpcWindow;
  settings["connection_window"] = 65535;
  settings["bdp_probing"] = false;
  settings["max_concurrent_streams"] = kGrpcMaxStreams;
  settings["max_message_bytes"] = kMaxMessageBytes;
  settings["tcp_nodelay"] = true;
  settings["congestion_control"] = d.congestion;
  settings["connections"] = 1;
  settings["compression"] = "none";
  settings["runtime"] = "gRPC C++ callback API on gRPC's own threads (" + std::to_string(cpus()) +
                        " CPUs)";
  Json entry = Json::object();
  entry["stack"] = "grpc";
  entry["shapes"] = shapes(client);
  entry["shapes"].push_back("send");  // 1.3: the Command RPC
  entry["tls"] = Json::array({"on", "off"});
  entry["load_models"] = client ? models() : Json::array();
  entry["payloads"] = payloads();
  entry["libraries"] = libraries;
  entry["settings"] = settings;
  entry["deviations"] = d.deviations;
  return entry;
}

Json quic_entry(bool client) {
  Json libraries = Json::object();
  libraries["ngtcp2"] = ngtcp2_version(0)->version_str;
  libraries["gnutls"] = gnutls_check_version(nullptr);
  libraries["protobuf"] = google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);
  Json settings = Json::object();
  settings["tls_versions"] = Json::array({"1.3"});
  settings["tls_groups"] = Json::array({"x25519"});
  settings["tls_ciphers"] = Json::array(
      {"TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"});
  settings["tls_resumption"] = false;
  settings["alpn"] = "rpcarena/1";
  settings["stream_window"] = kQuicWindow;
  settings["connection_window"] = kQuicWindow;
  settings["send_window"] = kQuicWindow;
  settings["max_concurrent_streams"] = kQuicMaxStreams;
  settings["max_message_bytes"] = kMaxMessageBytes;
  settings["congestion_control"] = "cubic";
  settings["udp_buffer_bytes"] = kUdpBuffer;
  settings["idle_timeout_ms"] = kQuicIdleMs;
  settings["keep_alive_ms"] = kQuicKeepAliveMs;
  settings["connections"] = 1;
  settings["compression"] = "none";
  settings["runtime"] = client ? std::string("one epoll event loop thread per connection")
                               : "one epoll event loop thread per CPU (" + std::to_string(cpus()) +
                                     "), SO_REUSEPORT sockets";
  Json entry = Json::object();
  entry["stack"] = "quic";
  entry["shapes"] = shapes(client);
  entry["tls"] = Json::array({"on"});
  entry["not_offered"] = not_offered(Stack::kQuic, {Shape::kSend});
  entry["load_models"] = client ? models() : Json::array();
  entry["payloads"] = payloads();
  entry["libraries"] = libraries;
  entry["settings"] = settings;
  entry["deviations"] = quic_deviations();
  return entry;
}

// The zmq stack (1.3, docs/stacks.md "zmq"): plaintext only, unary and send.
Json zmq_entry(bool client) {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  Json libraries = Json::object();
  libraries["libzmq"] = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  libraries["cppzmq"] = std::to_string(CPPZMQ_VERSION_MAJOR) + "." + std::to_string(CPPZMQ_VERSION_MINOR) +
                        "." + std::to_string(CPPZMQ_VERSION_PATCH);
  libraries["protobuf"] = google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);
  Json settings = Json::object();
  settings["socket_types"] = "ROUTER to ROUTER";
  settings["router_mandatory"] = true;
  settings["sndhwm"] = kZmqHwm;
  settings["rcvhwm"] = kZmqHwm;
  settings["linger_ms"] = kZmqLinger;
  settings["io_threads"] = kZmqIoThreads;
  settings["tcp_nodelay"] = true;
  settings["congestion_control"] = "host default";
  settings["connections"] = 2;
  settings["compression"] = "none";
  settings["runtime"] = client ? std::string("one zmq_poll loop thread starts, sends and completes every "
                                             "operation; libzmq's 1 I/O thread")
                               : std::string("one zmq_poll loop thread serves both endpoints; libzmq's 1 I/O thread");
  Json entry = Json::object();
  entry["stack"] = "zmq";
  entry["shapes"] = Json::array({"unary", "send"});
  entry["load_models"] = client ? models() : Json::array();
  entry["payloads"] = payloads();
  entry["libraries"] = libraries;
  entry["settings"] = settings;
  entry["tls"] = Json::array({"off"});
  entry["not_offered"] = not_offered(Stack::kZmq, {Shape::kClientStream, Shape::kServerStream, Shape::kBidi});
  if (!client) entry["not_offered"]["pingpong"] = not_offered_reason(Stack::kZmq, Shape::kBidi);
  entry["conformance_faults"] = true;
  entry["deviations"] = Json::array(
      {"TCP congestion control: cubic required; libzmq gives no access to its TCP sockets, so the "
       "host default is used"});
  return entry;
}

// grpc-cq (1.3, docs/stacks.md "grpc-cq"): the grpc stack's wire and settings under another API.
Json grpc_cq_entry(bool client) {
  Json entry = grpc_entry(client);
  entry["stack"] = "grpc-cq";
  entry["shapes"] = Json::array({"unary", "send"});
  entry["not_offered"] =
      not_offered(Stack::kGrpcCq, {Shape::kClientStream, Shape::kServerStream, Shape::kBidi});
  if (!client) entry["not_offered"]["pingpong"] = not_offered_reason(Stack::kGrpcCq, Shape::kBidi);
  entry["settings"]["runtime"] =
      client ? std::string("one application thread submits every call (PrepareAsyncUnary, "
                           "PrepareAsyncCommand) and drains the one grpc::CompletionQueue")
             : "synchronous BenchService::Service on gRPC's default sync server thread pool (" +
                   std::to_string(cpus()) + " CPUs)";
  entry["conformance_faults"] = true;
  return entry;
}

}  // namespace

int run_capabilities() {
  Json build = Json::object();
  build["toolchain"] = PEER_COMPILER;
  build["flags"] = PEER_CXX_FLAGS;
  build["build_type"] = PEER_BUILD_TYPE;
  build["hdr_histogram"] = "HdrHistogram_c from the npm package native-hdr-histogram@1.0.0";
  Json fields = Json::object();
  fields["peer"] = "rpcarena-peer-cpp";
  fields["language"] = "cpp";
  fields["version"] = PEER_VERSION;
  fields["revision"] = "1.5";
  // 1.5: native code, profiled from outside by `rpcarena profile` with Linux perf
  fields["profiler"] = "perf";
  fields["build"] = build;
  fields["files"] = Json::array({executable_path()});
  fields["roles"] = Json{{"client", Json::array({grpc_entry(true), quic_entry(true), zmq_entry(true), grpc_cq_entry(true)})},
                         {"server", Json::array({grpc_entry(false), quic_entry(false), zmq_entry(false), grpc_cq_entry(false)})}};
  emit("capabilities", fields);
  return 0;
}

}  // namespace rpcarena
