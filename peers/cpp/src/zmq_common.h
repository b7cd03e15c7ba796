// The zmq stack's wire mapping (docs/stacks.md "zmq", 1.3), shared by its client and server:
// ROUTER to ROUTER over TCP, a request endpoint (`[id][Request]` answered `[id][Status][Response]`)
// and a command endpoint (`[id][Request]`, no answer), the HELLO handshake, and the socket options
// both ends set (ROUTER_MANDATORY, HWMs 1000, linger 0, one I/O thread).
//
// The frame logic is pure (frames in, frames out), so the unit tests run it without sockets:
// ZmqHandler is the server's validation and answer for one message (conformance faults included),
// parse_reply the client's reading of one reply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "args.h"
#include "stacks.h"
#include "workload.h"

namespace rpcarena {

inline constexpr const char* kZmqRequestId = "rpcarena-request";
inline constexpr const char* kZmqCommandId = "rpcarena-command";
inline constexpr const char* kZmqHello = "HELLO";
inline constexpr int kZmqHwm = 1000;
inline constexpr int kZmqIoThreads = 1;
inline constexpr int kZmqLinger = 0;
inline constexpr int kZmqStatusInvalid = 3;
inline constexpr int kZmqStatusInternal = 13;

using Frames = std::vector<std::string>;

// The 8-byte big-endian operation id frame.
std::string encode_id(uint64_t id);
std::optional<uint64_t> decode_id(const std::string& frame);

// "2 frames of 8, 3 bytes: [00 00 00 00 00 00 00 01] [08 01 22]": sizes and each frame's first 16
// bytes in hex, for first_rejection and the client's failures.
std::string describe_frames(const Frames& frames);

// A ROUTER socket with the stack's options (routing id when not empty; IPv6 for an IPv6 host).
zmq::socket_t router_socket(zmq::context_t& ctx, const std::string& routing_id, bool ipv6);
// "tcp://127.0.0.1:4000", "tcp://[::1]:4000".
std::string tcp_endpoint(const std::string& host, uint16_t port);
// The port of a bound endpoint as ZMQ_LAST_ENDPOINT gives it ("tcp://127.0.0.1:40917").
uint16_t endpoint_port(const std::string& endpoint);

// What the server does with one message (the frames after the routing id) and what it answers.
class ZmqHandler {
 public:
  // `fault`: a server conformance mode of docs/stacks.md "Conformance faults on zmq", or "".
  ZmqHandler(ServerCounters& counters, std::string fault) : counters_(counters), fault_(std::move(fault)) {}
  // Request endpoint: the reply frames, or nullopt when the id is unreadable (nobody to answer).
  std::optional<Frames> request(const Frames& frames);
  // Command endpoint: validated and counted; nothing is answered.
  void command(const Frames& frames);

 private:
  // Parses [id][Request]; on failure counts and describes the rejection (returns nullopt).
  std::optional<pb::Request> parse(const Frames& frames, const char* endpoint, std::optional<uint64_t>* id);
  Frames answer(const std::string& id, const pb::Request& request);
  bool validates() const { return fault_ != "skip-validation" && fault_ != "no-validation"; }
  ServerCounters& counters_;
  std::string fault_;
};

// A status frame: code 0 encodes to the empty frame.
std::string status_frame(uint32_t code, const std::string& message);

// The client's reading of one reply (the frames after the routing id).
struct ZmqReply {
  std::optional<uint64_t> id;  // when the id frame is readable
  std::string error;           // why the reply is malformed ("" when it parsed)
  uint32_t status = 0;
  std::string status_message;
  pb::Response response;
};
ZmqReply parse_reply(const Frames& frames);

// The requests a client conformance mode sends (unary or send, seq 0): docs/stacks.md and
// crates/peer/src/fault.rs. Returns false for a mode that does not change a unary request.
bool apply_client_fault(const std::string& mode, pb::Request* request);

}  // namespace rpcarena
