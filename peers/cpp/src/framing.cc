#include "framing.h"

#include <cstring>

namespace rpcarena {

namespace {
constexpr const char* kPaths[] = {
    "/rpcarena.bench.v1.BenchService/Unary",
    "/rpcarena.bench.v1.BenchService/ClientStream",
    "/rpcarena.bench.v1.BenchService/ServerStream",
    "/rpcarena.bench.v1.BenchService/Bidi",
};

void put_prefix(char* p, FrameType type, uint32_t len) {
  p[0] = static_cast<char>(type);
  p[1] = static_cast<char>(len >> 24);
  p[2] = static_cast<char>(len >> 16);
  p[3] = static_cast<char>(len >> 8);
  p[4] = static_cast<char>(len);
}
}  // namespace

const char* frame_name(FrameType t) {
  switch (t) {
    case FrameType::kHeader: return "HEADER";
    case FrameType::kMessage: return "MESSAGE";
    case FrameType::kEnd: return "END";
    case FrameType::kStatus: return "STATUS";
  }
  return "?";
}

const char* method_path(Shape shape) { return kPaths[static_cast<int>(shape)]; }

bool shape_of_path(const char* data, size_t len, Shape* out) {
  for (int i = 0; i < 4; ++i) {
    if (std::strlen(kPaths[i]) == len && std::memcmp(kPaths[i], data, len) == 0) {
      *out = static_cast<Shape>(i);
      return true;
    }
  }
  return false;
}

void append_frame(std::string& out, FrameType type, const void* body, size_t len) {
  size_t at = out.size();
  out.resize(at + kFramePrefix + len);
  put_prefix(&out[at], type, static_cast<uint32_t>(len));
  if (len) std::memcpy(&out[at + kFramePrefix], body, len);
}

void append_message(std::string& out, FrameType type, const google::protobuf::MessageLite& m) {
  size_t len = m.ByteSizeLong();
  size_t at = out.size();
  out.resize(at + kFramePrefix + len);
  put_prefix(&out[at], type, static_cast<uint32_t>(len));
  m.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&out[at + kFramePrefix]));
}

void FrameReader::feed(const uint8_t* data, size_t len) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(reinterpret_cast<const char*>(data), len);
}

bool FrameReader::has_frame() const {
  if (pending() < kFramePrefix) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
  uint32_t len = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 8) | p[4];
  return pending() >= kFramePrefix + len;
}

FrameReader::Result FrameReader::next(Frame* frame, std::string* error) {
  if (pending() < kFramePrefix) return Result::kNeedMore;
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
  uint8_t type = p[0];
  if (type < 0x01 || type > 0x04) {
    *error = "unknown frame type 0x" + std::string(1, "0123456789abcdef"[type >> 4]) +
             std::string(1, "0123456789abcdef"[type & 15]) + " (expected 0x01 to 0x04)";
    return Result::kError;
  }
  uint32_t len = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 8) | p[4];
  if (len > kMaxFrameBody) {
    *error = "frame body of " + std::to_string(len) + " bytes is above the maximum " +
             std::to_string(kMaxFrameBody);
    return Result::kError;
  }
  if (pending() < kFramePrefix + len) return Result::kNeedMore;
  frame->type = static_cast<FrameType>(type);
  frame->body = p + kFramePrefix;
  frame->len = len;
  pos_ += kFramePrefix + len;
  return Result::kFrame;
}

}  // namespace rpcarena
