// The workload contract (proto/rpcarena/bench/v1/bench.proto, docs/peer-protocol.md "Payload
// kinds" and "Validation duties"): building requests and responses of either payload kind, the
// structured generation rule, and every check a client or server makes. Pure functions; a check
// returns an empty string when it passes and otherwise the reason, in words a report can show.
#pragma once

#include <cstdint>
#include <string>

#include "args.h"
#include "rpcarena/bench/v1/bench.pb.h"

namespace rpcarena {

namespace pb = ::rpcarena::bench::v1;

inline constexpr int64_t kStructuredEpochMs = 1700000000000;

// Structured(seq, size): the message whose encoding is exactly `size` bytes (size 0 or >= 3).
void fill_structured(pb::Structured* out, uint64_t seq, uint32_t size);

// The payload length of a message: zeros' byte count, or the encoded length of `body`.
uint64_t payload_len(const std::string& payload, const pb::Structured* body);

// Client side ------------------------------------------------------------------------------

// A request of `kind`: seq, response_size, response_messages (server stream only, else 0), and a
// payload of `request_size` bytes.
void build_request(pb::Request* out, PayloadKind kind, uint64_t seq, uint32_t request_size,
                   uint32_t response_size, uint32_t response_messages);

std::string check_response(const pb::Response& r, PayloadKind kind, uint64_t expected_seq,
                           uint32_t response_size);

// A client-stream summary after `messages` requests of `request_size` bytes.
std::string check_summary(const pb::Summary& s, PayloadKind kind, uint64_t messages,
                          uint32_t request_size, uint32_t response_size);

// The count of a call's responses, which the client checks itself: gRPC C++ reads only the one
// response of a unary or client-stream call and then waits, without end, for trailers that come
// after any further message (the C and Go peers see that message; see grpc_client.cc).
// A response arrived after `got` others, in a call of `expected`: "" or why it is one too many.
std::string check_one_more(uint64_t got, uint64_t expected, const char* what);
// The call ended with status OK after `got` of `expected` responses: "" or why that is invalid.
std::string check_count_at_end(uint64_t got, uint64_t expected, const char* what);

// Server side ------------------------------------------------------------------------------

// Checks one request on its own: payload kind, payload contents, response_size range, for a
// server stream response_messages 1..1,000,000, and for a one-way command (send) response_size 0.
std::string check_request(const pb::Request& r, Shape shape);

// The k-th request of a client stream or bidi call: its own checks, then seq == k and the same
// payload kind, payload length and response_size as the first.
class StreamCheck {
 public:
  std::string next(const pb::Request& r, Shape shape);
  uint64_t count() const { return count_; }
  uint64_t payload_bytes() const { return bytes_; }
  uint64_t last_seq() const { return count_ == 0 ? 0 : count_ - 1; }
  PayloadKind kind() const { return kind_; }
  uint32_t response_size() const { return response_size_; }

 private:
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
  PayloadKind kind_ = PayloadKind::kZeros;
  uint64_t first_len_ = 0;
  uint32_t response_size_ = 0;
};

// Response payloads as the client checks them.
void build_response(pb::Response* out, PayloadKind kind, uint64_t seq, uint32_t size);
void build_summary(pb::Summary* out, const StreamCheck& received);

// The payload kind a (checked) request asks for.
inline PayloadKind kind_of(const pb::Request& r) {
  return r.payload_kind() == pb::PAYLOAD_KIND_STRUCTURED ? PayloadKind::kStructured
                                                         : PayloadKind::kZeros;
}

// True when every byte of `data` is zero; `*first_nonzero` gets the position of the first that
// is not.
bool all_zero(const std::string& data, size_t* first_nonzero);

// A string of `n` zero bytes shared by every message of that size (built once per size per
// thread, so a zeros payload costs one copy, as in the other peers).
const std::string& zeros(uint32_t n);

}  // namespace rpcarena
