#include "workload.h"

#include <cstring>

#include <google/protobuf/io/coded_stream.h>

namespace rpcarena {

namespace {

size_t varint_len(uint64_t v) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(v);
}

// tag (1 byte) + length varint + body
size_t field_cost(size_t len) { return 1 + varint_len(len) + len; }

void fill_item(pb::Item* item, uint64_t k) {
  item->set_id(k + 1);
  item->set_name("item-" + std::to_string(k));
  item->set_score(static_cast<double>(k + 1) * 0.25);
  item->add_tags("bench");
  item->add_tags("tag" + std::to_string(k % 10));
}

// Encoded size of Item(k) without building it: id varint, name, score (fixed64), two tags.
size_t item_size(uint64_t k) {
  size_t name = 5 + std::to_string(k).size();
  size_t tag = 3 + 1;  // "tag" + one digit
  return 1 + varint_len(k + 1) + field_cost(name) + 9 + field_cost(5) + field_cost(tag);
}

}  // namespace

void fill_structured(pb::Structured* out, uint64_t seq, uint32_t size_u32) {
  out->Clear();
  size_t size = size_u32;
  if (size < 3) return;
  std::string seq_text = std::to_string(seq);
  int64_t created = kStructuredEpochMs + static_cast<int64_t>(seq % 1000000000ull);
  // created_unix_ms: tag + varint; the map entry: tag, length, key field (5 bytes) and value field.
  size_t base = 1 + varint_len(static_cast<uint64_t>(created)) + field_cost(5 + 2 + seq_text.size());
  size_t used = 0;
  if (base + 3 <= size) {
    out->set_created_unix_ms(created);
    (*out->mutable_attributes())["seq"] = seq_text;
    used = base;
    for (uint64_t k = 0;; ++k) {
      size_t cost = field_cost(item_size(k));
      if (used + cost + 3 > size) break;
      used += cost;
      fill_item(out->add_items(), k);
    }
  }
  size_t rest = size - used;  // 3 <= rest <= 128
  std::string title(rest - 2, 'a');
  for (size_t j = 0; j < title.size(); ++j) {
    title[j] = static_cast<char>('a' + (seq % 26 + j % 26) % 26);
  }
  out->set_title(std::move(title));
}

uint64_t payload_len(const std::string& payload, const pb::Structured* body) {
  return payload.size() + (body ? body->ByteSizeLong() : 0);
}

bool all_zero(const std::string& data, size_t* first_nonzero) {
  const char* p = data.data();
  size_t n = data.size();
  if (n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0)) return true;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) {
      *first_nonzero = i;
      return false;
    }
  }
  return true;
}

const std::string& zeros(uint32_t n) {
  thread_local std::string cache;
  if (cache.size() != n) cache.assign(n, '\0');
  return cache;
}

void build_request(pb::Request* out, PayloadKind kind, uint64_t seq, uint32_t request_size,
                   uint32_t response_size, uint32_t response_messages) {
  out->Clear();
  out->set_seq(seq);
  out->set_response_size(response_size);
  out->set_response_messages(response_messages);
  if (kind == PayloadKind::kZeros) {
    out->set_payload(zeros(request_size));
  } else {
    out->set_payload_kind(pb::PAYLOAD_KIND_STRUCTURED);
    fill_structured(out->mutable_body(), seq, request_size);
  }
}

namespace {

std::string hex_byte(unsigned char b) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Field by field against Structured(seq, size), naming the first field that differs.
std::string check_structured(const std::string& what, const pb::Structured* body, uint64_t seq,
                             uint32_t size) {
  static const pb::Structured kEmpty;
  const pb::Structured& got = body ? *body : kEmpty;
  size_t len = got.ByteSizeLong();
  if (len != size) {
    return what + ": structured payload encodes to " + std::to_string(len) + " bytes but " +
           std::to_string(size) + " was requested";
  }
  pb::Structured want;
  fill_structured(&want, seq, size);
  std::string field;
  if (got.title() != want.title()) {
    field = "title";
  } else if (got.created_unix_ms() != want.created_unix_ms()) {
    field = "created_unix_ms";
  } else if (got.attributes_size() != want.attributes_size() ||
             (want.attributes_size() == 1 &&
              (got.attributes().count("seq") == 0 ||
               got.attributes().at("seq") != want.attributes().at("seq")))) {
    field = "attributes";
  } else {
    int n = std::min(got.items_size(), want.items_size());
    int k = 0;
    for (; k < n; ++k) {
      const pb::Item& a = got.items(k);
      const pb::Item& b = want.items(k);
      bool same = a.id() == b.id() && a.name() == b.name() && a.score() == b.score() &&
                  a.tags_size() == b.tags_size();
      for (int t = 0; same && t < a.tags_size(); ++t) same = a.tags(t) == b.tags(t);
      if (!same) break;
    }
    if (k == n && got.items_size() == want.items_size()) return "";
    field = "items[" + std::to_string(k) + "]";
  }
  return what + ": structured payload differs from the one generated for seq " +
         std::to_string(seq) + " and " + std::to_string(size) + " bytes in " + field;
}

std::string check_body(const std::string& what, PayloadKind kind, const std::string& payload,
                       const pb::Structured* body, uint64_t seq, uint32_t size) {
  if (kind == PayloadKind::kZeros) {
    if (body) return what + ": a structured body where zero bytes were requested";
    if (payload.size() != size) {
      return what + ": payload length " + std::to_string(payload.size()) + " but " +
             std::to_string(size) + " was requested";
    }
    size_t pos = 0;
    if (!all_zero(payload, &pos)) {
      return what + ": payload byte " + std::to_string(pos) + " is " +
             hex_byte(static_cast<unsigned char>(payload[pos])) + ", expected zero";
    }
    return "";
  }
  if (!payload.empty()) {
    return what + ": " + std::to_string(payload.size()) +
           " payload bytes where a structured body was requested";
  }
  return check_structured(what, body, seq, size);
}

}  // namespace

std::string check_response(const pb::Response& r, PayloadKind kind, uint64_t expected_seq,
                           uint32_t response_size) {
  if (r.seq() != expected_seq) {
    return "response seq " + std::to_string(r.seq()) + " but " + std::to_string(expected_seq) +
           " was expected";
  }
  return check_body("response", kind, r.payload(), r.has_body() ? &r.body() : nullptr,
                    expected_seq, response_size);
}

std::string check_summary(const pb::Summary& s, PayloadKind kind, uint64_t messages,
                          uint32_t request_size, uint32_t response_size) {
  uint64_t bytes = messages * request_size;
  if (s.count() != messages || s.payload_bytes() != bytes || s.last_seq() != messages - 1) {
    return "summary says count " + std::to_string(s.count()) + ", payload_bytes " +
           std::to_string(s.payload_bytes()) + ", last_seq " + std::to_string(s.last_seq()) +
           "; expected " + std::to_string(messages) + ", " + std::to_string(bytes) + ", " +
           std::to_string(messages - 1);
  }
  return check_body("summary", kind, s.payload(), s.has_body() ? &s.body() : nullptr, s.last_seq(),
                    response_size);
}

namespace {
std::string count_of(uint64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}
}  // namespace

std::string check_one_more(uint64_t got, uint64_t expected, const char* what) {
  if (got < expected) return "";
  return "more than " + count_of(expected, what) + " before the status";
}

std::string check_count_at_end(uint64_t got, uint64_t expected, const char* what) {
  if (got == expected) return "";
  return "status OK after " + std::to_string(got) + " of " + count_of(expected, what);
}

std::string check_request(const pb::Request& r, Shape shape) {
  std::string what = "request " + std::to_string(r.seq());
  int kind = r.payload_kind();
  if (kind != 0 && kind != 1) {
    return what + ": unknown payload_kind " + std::to_string(kind) +
           "; expected 0 (zeros) or 1 (structured)";
  }
  if (r.response_size() > kMaxPayload) {
    return what + ": response_size " + std::to_string(r.response_size()) + " is above " +
           std::to_string(kMaxPayload);
  }
  if (kind == 1 && (r.response_size() == 1 || r.response_size() == 2)) {
    return what + ": a structured response of " + std::to_string(r.response_size()) +
           " bytes cannot be built; use 0 or at least 3";
  }
  if (shape == Shape::kSend && r.response_size() != 0) {
    return what + ": response_size " + std::to_string(r.response_size()) +
           " in a one-way command; a command carries response_size 0";
  }
  if (shape == Shape::kServerStream &&
      (r.response_messages() < 1 || r.response_messages() > kMaxMessages)) {
    return what + ": response_messages " + std::to_string(r.response_messages()) +
           " is outside 1..1000000";
  }
  if (kind == 0) {
    if (r.has_body()) return what + ": a structured body in a zeros request";
    size_t pos = 0;
    if (!all_zero(r.payload(), &pos)) {
      return what + ": payload byte " + std::to_string(pos) + " is " +
             hex_byte(static_cast<unsigned char>(r.payload()[pos])) + ", expected zero";
    }
    return "";
  }
  if (!r.payload().empty()) {
    return what + ": " + std::to_string(r.payload().size()) + " payload bytes in a structured request";
  }
  const pb::Structured* body = r.has_body() ? &r.body() : nullptr;
  size_t len = body ? body->ByteSizeLong() : 0;
  if (len == 1 || len == 2) {
    return what + ": a structured body of " + std::to_string(len) + " bytes cannot be valid";
  }
  return check_structured(what, body, r.seq(), static_cast<uint32_t>(len));
}

std::string StreamCheck::next(const pb::Request& r, Shape shape) {
  if (r.seq() != count_) {
    return "request " + std::to_string(count_) + ": seq " + std::to_string(r.seq()) +
           ", expected " + std::to_string(count_);
  }
  std::string own = check_request(r, shape);
  if (!own.empty()) return own;
  uint64_t len = payload_len(r.payload(), r.has_body() ? &r.body() : nullptr);
  if (count_ == 0) {
    kind_ = kind_of(r);
    first_len_ = len;
    response_size_ = r.response_size();
  } else if (kind_of(r) != kind_ || len != first_len_ || r.response_size() != response_size_) {
    return "request " + std::to_string(count_) + ": payload kind " + name(kind_of(r)) +
           ", length " + std::to_string(len) + ", response_size " +
           std::to_string(r.response_size()) + " differ from the first request's " +
           name(kind_) + ", " + std::to_string(first_len_) + ", " + std::to_string(response_size_);
  }
  ++count_;
  bytes_ += len;
  return "";
}

void build_response(pb::Response* out, PayloadKind kind, uint64_t seq, uint32_t size) {
  out->Clear();
  out->set_seq(seq);
  if (kind == PayloadKind::kZeros) {
    out->set_payload(zeros(size));
  } else {
    fill_structured(out->mutable_body(), seq, size);
  }
}

void build_summary(pb::Summary* out, const StreamCheck& received) {
  out->Clear();
  out->set_count(received.count());
  out->set_payload_bytes(received.payload_bytes());
  out->set_last_seq(received.last_seq());
  if (received.kind() == PayloadKind::kZeros) {
    out->set_payload(zeros(received.response_size()));
  } else {
    fill_structured(out->mutable_body(), received.last_seq(), received.response_size());
  }
}

}  // namespace rpcarena
