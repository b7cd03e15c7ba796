#include "zmq_common.h"

#include <cstdio>

namespace rpcarena {

std::string encode_id(uint64_t id) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, id >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(id & 0xff);
  return out;
}

std::optional<uint64_t> decode_id(const std::string& frame) {
  if (frame.size() != 8) return std::nullopt;
  uint64_t id = 0;
  for (unsigned char c : frame) id = (id << 8) | c;
  return id;
}

std::string describe_frames(const Frames& frames) {
  std::string sizes, bytes;
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string& f = frames[i];
    sizes += (i ? ", " : "") + std::to_string(f.size());
    bytes += i ? " [" : "[";
    for (size_t j = 0; j < f.size() && j < 16; ++j) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%s%02x", j ? " " : "", static_cast<unsigned char>(f[j]));
      bytes += hex;
    }
    bytes += f.size() > 16 ? " ...]" : "]";
  }
  std::string n = std::to_string(frames.size()) + (frames.size() == 1 ? " frame" : " frames");
  if (frames.empty()) return n;
  return n + " of " + sizes + (frames.size() == 1 && frames[0].size() == 1 ? " byte: " : " bytes: ") + bytes;
}

zmq::socket_t router_socket(zmq::context_t& ctx, const std::string& routing_id, bool ipv6) {
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::router_mandatory, 1);
  s.set(zmq::sockopt::sndhwm, kZmqHwm);
  s.set(zmq::sockopt::rcvhwm, kZmqHwm);
  s.set(zmq::sockopt::linger, kZmqLinger);
  if (ipv6) s.set(zmq::sockopt::ipv6, 1);
  if (!routing_id.empty()) s.set(zmq::sockopt::routing_id, routing_id);
  return s;
}

std::string tcp_endpoint(const std::string& host, uint16_t port) {
  bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

uint16_t endpoint_port(const std::string& endpoint) {
  size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return 0;
  return static_cast<uint16_t>(std::stoul(endpoint.substr(colon + 1)));
}

std::string status_frame(uint32_t code, const std::string& message) {
  pb::Status s;
  s.set_code(code);
  s.set_message(message);
  return s.SerializeAsString();
}

// --- The server ------------------------------------------------------------------------------

std::optional<pb::Request> ZmqHandler::parse(const Frames& frames, const char* endpoint,
                                             std::optional<uint64_t>* id) {
  counters_.rpc();
  counters_.request();
  *id = frames.empty() ? std::nullopt : decode_id(frames[0]);
  std::string why;
  pb::Request request;
  if (frames.size() != 2) {
    why = "a message of " + std::to_string(frames.size()) + " frames, expected 2 ([id][Request])";
  } else if (!*id) {
    why = "an id frame of " + std::to_string(frames[0].size()) + " bytes, expected 8";
  } else if (!request.ParseFromString(frames[1])) {
    why = "a body that does not decode as rpcarena.bench.v1.Request";
  } else {
    return request;
  }
  counters_.rejected("unparsable message on the " + std::string(endpoint) + " endpoint (" + why +
                     "): " + describe_frames(frames));
  return std::nullopt;
}

std::optional<Frames> ZmqHandler::request(const Frames& frames) {
  std::optional<uint64_t> id;
  std::optional<pb::Request> request = parse(frames, "request", &id);
  if (!request) {
    if (!id) return std::nullopt;
    return Frames{frames[0], status_frame(kZmqStatusInvalid, "unparsable message: " + describe_frames(frames)), ""};
  }
  if (validates()) {
    std::string error = check_request(*request, Shape::kUnary);
    if (!error.empty()) {
      counters_.rejected("request endpoint: " + error);
      return Frames{frames[0], status_frame(kZmqStatusInvalid, error), ""};
    }
  }
  return answer(frames[0], *request);
}

void ZmqHandler::command(const Frames& frames) {
  std::optional<uint64_t> id;
  std::optional<pb::Request> request = parse(frames, "command", &id);
  if (!request) return;
  if (validates()) {
    std::string error = check_request(*request, Shape::kSend);
    if (!error.empty()) {
      counters_.rejected("command endpoint: " + error);
      return;
    }
  }
  counters_.command();
}

namespace {

// crates/peer/src/fault.rs corrupt_structured: one field changed, the encoded size kept.
void corrupt_structured(pb::Structured* body, uint64_t seq) {
  if (body->created_unix_ms() != 0) {
    body->set_created_unix_ms(body->created_unix_ms() + 1);
    return;
  }
  if (body->title().empty()) fill_structured(body, seq, 3);
  std::string title = body->title();
  char first = title.empty() ? 'a' : title[0];
  title[0] = static_cast<char>('a' + ((first - 'a') % 26 + 1) % 26);
  body->set_title(title);
}

// The per-message server faults on a response of `kind`.
void corrupt_response(const std::string& fault, PayloadKind kind, pb::Response* r) {
  std::string* payload = r->mutable_payload();
  if (fault == "wrong-seq") {
    r->set_seq(r->seq() + 1);
  } else if (fault == "short-payload" && kind == PayloadKind::kZeros) {
    if (payload->empty()) payload->push_back('\0'); else payload->pop_back();
  } else if (fault == "short-payload") {
    if (r->body().title().empty()) {
      fill_structured(r->mutable_body(), r->seq(), 3);
    } else {
      r->mutable_body()->mutable_title()->pop_back();
    }
  } else if (fault == "nonzero-byte" && kind == PayloadKind::kZeros) {
    if (payload->empty()) payload->push_back('\1'); else payload->back() = '\1';
  } else if (fault == "nonzero-byte") {
    payload->push_back('\1');
  } else if (fault == "corrupt-structured" && kind == PayloadKind::kZeros) {
    fill_structured(r->mutable_body(), r->seq(), 3);
  } else if (fault == "corrupt-structured") {
    corrupt_structured(r->mutable_body(), r->seq());
  }
}

}  // namespace

Frames ZmqHandler::answer(const std::string& id, const pb::Request& request) {
  PayloadKind kind = kind_of(request);
  if (fault_ == "error-status" || fault_ == "wrong-summary") {
    return Frames{id, status_frame(kZmqStatusInternal, "conformance fault " + fault_ +
                                                            ": INTERNAL instead of the answer"), ""};
  }
  if (fault_ == "missing-message" || fault_ == "early-status") return Frames{id, "", ""};
  pb::Response response;
  build_response(&response, kind, request.seq(), request.response_size());
  corrupt_response(fault_, kind, &response);
  counters_.response();
  Frames out{id, "", response.SerializeAsString()};
  if (fault_ == "extra-message") {
    pb::Response next;
    build_response(&next, kind, request.seq() + 1, request.response_size());
    out.push_back(next.SerializeAsString());
  }
  return out;
}

// --- The client --------------------------------------------------------------------------------

ZmqReply parse_reply(const Frames& frames) {
  ZmqReply r;
  if (!frames.empty()) r.id = decode_id(frames[0]);
  pb::Status status;
  if (frames.size() != 3) {
    r.error = "a reply of " + std::to_string(frames.size()) + " frames, expected 3 ([id][Status][Response])";
  } else if (!r.id) {
    r.error = "a reply whose id frame is " + std::to_string(frames[0].size()) + " bytes, expected 8";
  } else if (!status.ParseFromString(frames[1])) {
    r.error = "a reply whose status frame does not decode as rpcarena.bench.v1.Status";
  } else if (status.code() == 0 && !r.response.ParseFromString(frames[2])) {
    r.error = "a reply whose response frame does not decode as rpcarena.bench.v1.Response";
  } else {
    r.status = status.code();
    r.status_message = status.message();
    return r;
  }
  r.error += ": " + describe_frames(frames);
  return r;
}

bool apply_client_fault(const std::string& mode, pb::Request* request) {
  if (mode == "nonzero-byte") {
    std::string* p = request->mutable_payload();
    if (kind_of(*request) == PayloadKind::kStructured || p->empty()) {
      p->push_back('\1');
    } else {
      p->back() = '\1';
    }
  } else if (mode == "corrupt-structured") {
    corrupt_structured(request->mutable_body(), request->seq());
  } else if (mode == "response-size-too-large") {
    request->set_response_size(kMaxPayload + 1);
  } else {
    return false;
  }
  return true;
}

}  // namespace rpcarena
