// Command-line arguments exactly as docs/peer-protocol.md "Commands" lists them. Parsing is pure:
// it returns a Command or throws ArgError whose message names the argument; main turns that into
// an `error` event (phase startup, code config) and exit code 2.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rpcarena {

struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Stack { kGrpc, kQuic, kZmq };
enum class Shape { kUnary, kClientStream, kServerStream, kBidi, kSend };
enum class Load { kClosed, kWindow, kBackpressure, kSendSaturation, kOpen };
enum class PayloadKind { kZeros = 0, kStructured = 1 };
enum class Arrival { kConstant, kPoisson };

const char* name(Stack s);
const char* name(Shape s);
const char* name(Load l);
const char* name(PayloadKind p);
const char* name(Arrival a);

// Limits of the protocol (and of this peer, where it states a lower one).
inline constexpr uint32_t kMaxPayload = 16u * 1024 * 1024;      // 16 MiB
inline constexpr uint32_t kMaxMessageBytes = kMaxPayload + 1024;  // + 1 KiB for other fields
inline constexpr uint32_t kMaxMessages = 1000000;
inline constexpr uint32_t kMaxConcurrency = 10000;
inline constexpr uint32_t kMaxInFlight = 100000;
inline constexpr uint32_t kMaxCap = 1000000;
inline constexpr uint32_t kMaxStreams = 1000;  // this peer's limit for send-saturation (README)
inline constexpr double kMaxRate = 10000000.0;

struct HostPort {
  std::string host;  // without brackets for IPv6
  uint16_t port = 0;
  std::string text;  // as given
};

struct ServerArgs {
  Stack stack = Stack::kGrpc;
  HostPort listen;
  bool tls = true;  // --tls on|off (1.3); off: no --cert, no --key
  std::string cert;
  std::string key;
  std::string conformance_fault;  // zmq only: docs/stacks.md "Conformance faults on zmq"
};

struct ClientArgs {
  Stack stack = Stack::kGrpc;
  HostPort server;
  bool tls = true;  // --tls on|off (1.3); off: no --ca, no --server-name
  std::string server_name;
  std::string ca;
  Shape shape = Shape::kUnary;
  uint32_t concurrency = 1;
  uint32_t request_size = 0;
  uint32_t response_size = 0;
  uint32_t messages = 1;
  Load load = Load::kClosed;
  PayloadKind payload = PayloadKind::kZeros;
  uint32_t in_flight = 0;      // window
  uint32_t max_in_flight = 0;  // backpressure
  uint32_t streams = 0;        // send-saturation
  uint64_t settle_ms = 0;      // send-saturation
  double rate = 0;             // open
  std::string rate_text;       // open, as given (echoed as target_rate)
  Arrival arrival = Arrival::kConstant;
  uint64_t seed = 0;
  uint64_t warmup_ms = 0;
  uint64_t window_ms = 1;
  uint64_t drain_ms = 0;
  std::string conformance_fault;  // zmq only: one malformed call, then a good one; no sample

  // The lanes of the model (docs/peer-protocol.md "armed"): --in-flight for window, --streams for
  // send-saturation, --concurrency otherwise.
  uint32_t lanes() const;
};

struct Command {
  enum class Kind { kCapabilities, kServer, kClient } kind = Kind::kCapabilities;
  ServerArgs server;
  ClientArgs client;
};

// argv without the program name: {"client", "--stack", "grpc", ...}.
Command parse_args(const std::vector<std::string>& argv);

// The --conformance-fault modes (docs/stacks.md, crates/peer/src/fault.rs); `no-validation` is
// docs/stacks.md's name for the Rust peer's `skip-validation`.
const std::vector<std::string>& server_fault_modes();
const std::vector<std::string>& client_fault_modes();
// Why `stack` cannot carry `shape` ("" when it can): the refusal's and not_offered's words.
std::string not_offered_reason(Stack stack, Shape shape);

// Helpers shared with the tests and the stacks.
HostPort parse_host_port(const std::string& what, const std::string& text);
bool is_ip_literal(const std::string& text);
bool is_dns_name(const std::string& text);

}  // namespace rpcarena
