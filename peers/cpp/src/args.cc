#include "args.h"

#include <arpa/inet.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace rpcarena {

const char* name(Stack s) {
  switch (s) {
    case Stack::kGrpc: return "grpc";
    case Stack::kQuic: return "quic";
    case Stack::kZmq: return "zmq";
    case Stack::kGrpcCq: return "grpc-cq";
  }
  return "?";
}
const char* name(Shape s) {
  switch (s) {
    case Shape::kUnary: return "unary";
    case Shape::kClientStream: return "client_stream";
    case Shape::kServerStream: return "server_stream";
    case Shape::kBidi: return "bidi";
    case Shape::kSend: return "send";
  }
  return "?";
}
const char* name(Load l) {
  switch (l) {
    case Load::kClosed: return "closed";
    case Load::kWindow: return "window";
    case Load::kBackpressure: return "backpressure";
    case Load::kSendSaturation: return "send-saturation";
    case Load::kOpen: return "open";
  }
  return "?";
}
const char* name(PayloadKind p) { return p == PayloadKind::kZeros ? "zeros" : "structured"; }
const char* name(Arrival a) { return a == Arrival::kConstant ? "constant" : "poisson"; }

uint32_t ClientArgs::lanes() const {
  switch (load) {
    case Load::kWindow: return in_flight;
    case Load::kSendSaturation: return streams;
    default: return concurrency;
  }
}

namespace {

using Pairs = std::map<std::string, std::string>;

// Splits `--name value` pairs, refusing unknown, repeated and valueless arguments.
Pairs pairs(const std::vector<std::string>& args, size_t from, const std::set<std::string>& known,
            const std::string& command) {
  Pairs out;
  for (size_t i = from; i < args.size(); i += 2) {
    const std::string& flag = args[i];
    if (flag.rfind("--", 0) != 0) {
      throw ArgError("unexpected argument \"" + flag + "\" for " + command +
                     "; arguments are --name value pairs");
    }
    std::string key = flag.substr(2);
    if (!known.count(key)) {
      throw ArgError("unknown argument " + flag + " for " + command);
    }
    if (i + 1 >= args.size()) throw ArgError(flag + " needs a value");
    if (out.count(key)) throw ArgError(flag + " is given more than once");
    out[key] = args[i + 1];
  }
  return out;
}

const std::string& need(const Pairs& p, const std::string& key, const std::string& command) {
  auto it = p.find(key);
  if (it == p.end()) throw ArgError(command + " needs --" + key);
  return it->second;
}

// Decimal digits only, no sign, within [lo, hi].
uint64_t unsigned_arg(const std::string& key, const std::string& text, uint64_t lo, uint64_t hi) {
  bool digits = !text.empty() && text.size() <= 20;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  errno = 0;
  unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || v < lo || v > hi) {
    throw ArgError("--" + key + " " + text + " is not a whole number from " + std::to_string(lo) +
                   " to " + std::to_string(hi));
  }
  return v;
}

template <typename E>
E choice(const std::string& key, const std::string& text, const std::vector<E>& options) {
  std::string list;
  for (E e : options) {
    if (text == name(e)) return e;
    list += (list.empty() ? "" : ", ") + std::string(name(e));
  }
  throw ArgError("--" + key + " " + text + " is not one of " + list);
}

Stack stack_arg(const std::string& text) {
  if (text == "tcp") {
    throw ArgError("--stack tcp is not offered by this peer (it offers grpc, quic, zmq and grpc-cq)");
  }
  return choice<Stack>("stack", text, {Stack::kGrpc, Stack::kQuic, Stack::kZmq, Stack::kGrpcCq});
}

// --tls on|off (1.3, default on), and the stacks that take only one of them.
bool tls_arg(const Pairs& p, Stack stack) {
  bool on = true;
  if (auto it = p.find("tls"); it != p.end()) {
    if (it->second != "on" && it->second != "off") {
      throw ArgError("--tls " + it->second + " is not one of on, off");
    }
    on = it->second == "on";
  }
  if (stack == Stack::kQuic && !on) {
    throw ArgError("--tls off: QUIC has TLS 1.3 inside; --tls off does not apply to --stack quic");
  }
  if (stack == Stack::kZmq && on) {
    throw ArgError("--tls on: zmq has no TLS; run it with --tls off");
  }
  return on;
}

// With --tls on the TLS files are required; with off each is refused.
std::string tls_file(const Pairs& p, bool tls, const std::string& key, const std::string& command) {
  if (tls) return need(p, key, command);
  if (p.count(key)) throw ArgError("--" + key + " does not apply to --tls off");
  return "";
}

// pingpong (1.2) is a shape this peer serves but does not drive.
Shape shape_arg(const std::string& text) {
  if (text == "pingpong") {
    throw ArgError("--shape pingpong is not driven by this client (its servers serve it; it runs unary, "
                   "client_stream, server_stream, bidi and send)");
  }
  return choice<Shape>("shape", text,
                       {Shape::kUnary, Shape::kClientStream, Shape::kServerStream, Shape::kBidi,
                        Shape::kSend});
}

// The shapes a stack cannot carry, and why (capabilities' not_offered says the same).
void check_stack_shape(Stack stack, Shape shape) {
  if (stack == Stack::kQuic && shape == Shape::kSend) {
    throw ArgError("--shape send: " + not_offered_reason(stack, shape));
  }
  if ((stack == Stack::kZmq || stack == Stack::kGrpcCq) && shape != Shape::kUnary &&
      shape != Shape::kSend) {
    throw ArgError(std::string("--shape ") + name(shape) + ": " + not_offered_reason(stack, shape));
  }
}

// --payload (1.4 adds `dated`, the oRPC benchmarks' procedure, which JSON stacks carry and none
// of this peer's protobuf stacks does).
PayloadKind payload_arg(const std::string& text) {
  if (text == "dated") {
    throw ArgError("--payload dated: no stack of this peer carries it (dated is 1.4's JSON "
                   "procedure nested.procedure_1, for JSON stacks only; grpc, quic, zmq and grpc-cq "
                   "carry protobuf); use --payload zeros or structured");
  }
  return choice<PayloadKind>("payload", text, {PayloadKind::kZeros, PayloadKind::kStructured});
}

// --client-mode official|replay (1.4, default official). Every stack here calls through its one
// library client, so official is the only mode (capabilities lists no client_modes).
void client_mode_arg(const Pairs& p) {
  auto it = p.find("client-mode");
  if (it == p.end() || it->second == "official") return;
  if (it->second == "replay") {
    throw ArgError("--client-mode replay: no stack of this peer has a replay client (replay is "
                   "1.4's lean stand-in for a library's official client; these stacks take "
                   "official only); drop the argument or give --client-mode official");
  }
  throw ArgError("--client-mode " + it->second +
                 " is not one of official, replay (this peer's stacks take official only)");
}

constexpr uint64_t kMaxMs = 4294967295ull;  // 2^32 - 1

double rate_arg(const std::string& text) {
  // A decimal number: digits, optionally a point and more digits.
  size_t i = 0, n = text.size();
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && isdigit(static_cast<unsigned char>(text[i]))) ++i, ++int_digits;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && isdigit(static_cast<unsigned char>(text[i]))) ++i, ++frac_digits;
  }
  double v = (i == n && int_digits > 0) ? std::strtod(text.c_str(), nullptr) : -1;
  if (!(v > 0) || v > kMaxRate || !std::isfinite(v)) {
    throw ArgError("--rate " + text + " is not a decimal number above 0 and at most 10000000");
  }
  return v;
}

}  // namespace

bool is_ip_literal(const std::string& text) {
  unsigned char buf[16];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

bool is_dns_name(const std::string& text) {
  if (text.empty() || text.size() > 253) return false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t dot = text.find('.', start);
    size_t end = dot == std::string::npos ? text.size() : dot;
    size_t len = end - start;
    if (len == 0 || len > 63) return false;
    for (size_t i = start; i < end; ++i) {
      char c = text[i];
      bool ok = isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      if (!ok) return false;
    }
    if (text[start] == '-' || text[end - 1] == '-') return false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return true;
}

HostPort parse_host_port(const std::string& what, const std::string& text) {
  HostPort hp;
  hp.text = text;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw ArgError(what + " " + text + " is not HOST:PORT");
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw ArgError(what + " " + text + ": write an IPv6 address in brackets, e.g. [::1]:4000");
  }
  if (host.empty()) throw ArgError(what + " " + text + " has no host; expected HOST:PORT");
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  if (!digits || std::stoul(port) > 65535) {
    throw ArgError(what + " " + text + ": port \"" + port + "\" is not a number from 0 to 65535");
  }
  hp.host = host;
  hp.port = static_cast<uint16_t>(std::stoul(port));
  return hp;
}

namespace {

// --conformance-fault MODE (docs/stacks.md "Conformance faults"): zmq only, one of `modes`.
std::string fault_arg(const Pairs& p, Stack stack, const std::vector<std::string>& modes) {
  auto it = p.find("conformance-fault");
  if (it == p.end()) return "";
  if (stack != Stack::kZmq && stack != Stack::kGrpcCq) {
    throw ArgError(std::string("--conformance-fault is implemented on --stack zmq and grpc-cq only, not ") +
                   name(stack) + " (the Rust peer is the misbehaving partner there)");
  }
  std::string list;
  for (const std::string& m : modes) {
    if (m == it->second) return m;
    list += (list.empty() ? "" : ", ") + m;
  }
  throw ArgError("--conformance-fault " + it->second + " is not one of " + list);
}

ServerArgs server_args(const std::vector<std::string>& argv) {
  Pairs p = pairs(argv, 1, {"stack", "listen", "tls", "cert", "key", "conformance-fault"}, "server");
  ServerArgs s;
  s.stack = stack_arg(need(p, "stack", "server"));
  s.tls = tls_arg(p, s.stack);
  s.listen = parse_host_port("--listen", need(p, "listen", "server"));
  s.cert = tls_file(p, s.tls, "cert", "server");
  s.key = tls_file(p, s.tls, "key", "server");
  s.conformance_fault = fault_arg(p, s.stack, server_fault_modes());
  return s;
}

// The arguments every client takes, whatever its load model.
void common_client_args(Pairs& p, ClientArgs& c) {
  const std::string k = "client";
  c.stack = stack_arg(need(p, "stack", k));
  c.tls = tls_arg(p, c.stack);
  c.server = parse_host_port("--server", need(p, "server", k));
  c.server_name = tls_file(p, c.tls, "server-name", k);
  if (c.tls && !is_ip_literal(c.server_name) && !is_dns_name(c.server_name)) {
    throw ArgError("--server-name " + c.server_name + " is neither a DNS name nor an IP address");
  }
  c.ca = tls_file(p, c.tls, "ca", k);
  c.shape = shape_arg(need(p, "shape", k));
  check_stack_shape(c.stack, c.shape);
  c.concurrency = static_cast<uint32_t>(
      unsigned_arg("concurrency", need(p, "concurrency", k), 1, kMaxConcurrency));
  c.request_size = static_cast<uint32_t>(
      unsigned_arg("request-size", need(p, "request-size", k), 0, kMaxPayload));
  c.response_size = static_cast<uint32_t>(
      unsigned_arg("response-size", need(p, "response-size", k), 0, kMaxPayload));
  c.messages = static_cast<uint32_t>(
      unsigned_arg("messages-per-stream", need(p, "messages-per-stream", k), 1, kMaxMessages));
  c.load = choice<Load>("load", need(p, "load", k),
                        {Load::kClosed, Load::kWindow, Load::kBackpressure, Load::kSendSaturation,
                         Load::kOpen});
  if (p.count("payload")) c.payload = payload_arg(p["payload"]);
  client_mode_arg(p);
  c.warmup_ms = unsigned_arg("warmup-ms", need(p, "warmup-ms", k), 0, kMaxMs);
  c.window_ms = unsigned_arg("window-ms", need(p, "window-ms", k), 1, kMaxMs);
  c.drain_ms = unsigned_arg("drain-ms", need(p, "drain-ms", k), 0, kMaxMs);
}

// A structured payload needs room for its framing: 0 bytes or at least 3.
void check_structured_sizes(const ClientArgs& c) {
  if (c.payload != PayloadKind::kStructured) return;
  for (auto [key, size] : {std::pair<const char*, uint32_t>{"request-size", c.request_size},
                           {"response-size", c.response_size}}) {
    if (size == 1 || size == 2) {
      throw ArgError(std::string("--") + key + " " + std::to_string(size) +
                     " with --payload structured: a structured payload of " +
                     std::to_string(size) + " bytes cannot be built; use 0 or at least 3");
    }
  }
}

// Model arguments: required by their model, refused with any other.
void check_model_args(const Pairs& p, Load load) {
  struct Specific {
    const char* key;
    Load owner;
    bool required;
  };
  const Specific specific[] = {
      {"in-flight", Load::kWindow, true},        {"max-in-flight", Load::kBackpressure, true},
      {"streams", Load::kSendSaturation, true},  {"settle-ms", Load::kSendSaturation, true},
      {"rate", Load::kOpen, true},                {"arrival", Load::kOpen, false},
      {"seed", Load::kOpen, false},
  };
  for (const Specific& s : specific) {
    bool given = p.count(s.key) > 0;
    if (given && s.owner != load) {
      throw ArgError(std::string("--") + s.key + " does not apply to --load " + name(load));
    }
    if (!given && s.required && s.owner == load) {
      throw ArgError(std::string("--load ") + name(load) + " needs --" + s.key);
    }
  }
}

// The model arguments given (check_model_args has made sure they fit the model).
void model_args(Pairs& p, ClientArgs& c) {
  if (p.count("in-flight"))
    c.in_flight = static_cast<uint32_t>(unsigned_arg("in-flight", p["in-flight"], 1, kMaxInFlight));
  if (p.count("max-in-flight"))
    c.max_in_flight =
        static_cast<uint32_t>(unsigned_arg("max-in-flight", p["max-in-flight"], 1, kMaxCap));
  if (p.count("streams"))
    c.streams = static_cast<uint32_t>(unsigned_arg("streams", p["streams"], 1, kMaxStreams));
  if (p.count("settle-ms")) c.settle_ms = unsigned_arg("settle-ms", p["settle-ms"], 0, kMaxMs);
  if (p.count("rate")) {
    c.rate = rate_arg(p["rate"]);
    c.rate_text = p["rate"];
  }
  if (p.count("arrival"))
    c.arrival = choice<Arrival>("arrival", p["arrival"], {Arrival::kConstant, Arrival::kPoisson});
  if (p.count("seed")) c.seed = unsigned_arg("seed", p["seed"], 0, UINT64_MAX);
}

// A client mode must fit the workload: the stream modes do not apply to unary or send, and
// corrupt-structured needs structured payloads.
void check_client_fault(const ClientArgs& c) {
  const std::string& m = c.conformance_fault;
  if (m.empty()) return;
  if (m == "seq-order" || m == "length-change" || m == "empty-stream") {
    throw ArgError("--conformance-fault " + m + " applies to --shape client_stream or bidi, not " +
                   name(c.shape));
  }
  if (m == "response-messages-zero") {
    throw ArgError("--conformance-fault " + m + " applies to --shape server_stream, not " +
                   name(c.shape));
  }
  if (m == "corrupt-structured" && c.payload != PayloadKind::kStructured) {
    throw ArgError("--conformance-fault corrupt-structured needs --payload structured");
  }
}

ClientArgs client_args(const std::vector<std::string>& argv) {
  Pairs p = pairs(argv, 1,
                  {"stack", "server", "tls", "server-name", "ca", "shape", "concurrency", "request-size",
                   "response-size", "messages-per-stream", "load", "payload", "client-mode",
                   "in-flight", "max-in-flight", "streams", "settle-ms", "rate", "arrival", "seed",
                   "warmup-ms", "window-ms", "drain-ms", "conformance-fault"},
                  "client");
  ClientArgs c;
  common_client_args(p, c);
  check_structured_sizes(c);
  check_model_args(p, c.load);
  model_args(p, c);
  if (c.load == Load::kSendSaturation && c.shape != Shape::kClientStream &&
      c.shape != Shape::kSend) {
    throw ArgError(std::string("--load send-saturation runs client streams or one-way commands "
                               "(--shape client_stream or send), not --shape ") +
                   name(c.shape));
  }
  c.conformance_fault = fault_arg(p, c.stack, client_fault_modes());
  check_client_fault(c);
  return c;
}

}  // namespace

const std::vector<std::string>& server_fault_modes() {
  static const std::vector<std::string> modes = {
      "wrong-seq",     "short-payload", "nonzero-byte", "wrong-summary",      "missing-message",
      "extra-message", "early-status",  "error-status", "corrupt-structured", "skip-validation",
      "no-validation"};
  return modes;
}

const std::vector<std::string>& client_fault_modes() {
  static const std::vector<std::string> modes = {
      "nonzero-byte", "corrupt-structured", "seq-order", "length-change",
      "response-size-too-large", "response-messages-zero", "empty-stream"};
  return modes;
}

std::string not_offered_reason(Stack stack, Shape shape) {
  if (stack == Stack::kQuic && shape == Shape::kSend) {
    return "the quic stack's native framing answers every request with STATUS; a one-way command "
           "would need a frame type it does not have";
  }
  if (stack == Stack::kZmq && shape != Shape::kUnary && shape != Shape::kSend) {
    return std::string("the zmq stack carries only unary and send (docs/stacks.md \"zmq\"): its "
                       "wire mapping has no streams, so ") + name(shape) + " is not offered";
  }
  if (stack == Stack::kGrpcCq && shape != Shape::kUnary && shape != Shape::kSend) {
    return std::string("grpc-cq carries the reference's two RPCs, Unary and Command (docs/stacks.md "
                       "\"grpc-cq\"), so ") + name(shape) + " is not offered; the grpc stack has it";
  }
  return "";
}

Command parse_args(const std::vector<std::string>& argv) {
  if (argv.empty()) throw ArgError("no command given; expected capabilities, server or client");
  const std::string& cmd = argv[0];
  Command out;
  if (cmd == "capabilities") {
    if (argv.size() > 1) throw ArgError("capabilities takes no arguments, got " + argv[1]);
    out.kind = Command::Kind::kCapabilities;
  } else if (cmd == "server") {
    out.server = server_args(argv);
    out.kind = Command::Kind::kServer;
  } else if (cmd == "client") {
    out.client = client_args(argv);
    out.kind = Command::Kind::kClient;
  } else {
    throw ArgError("unknown command \"" + cmd + "\"; expected capabilities, server or client");
  }
  return out;
}

}  // namespace rpcarena
