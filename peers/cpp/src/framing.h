// The native framing of the quic stack (docs/stacks.md "Native framing"), byte for byte:
// type (1 byte), length (4 bytes, big-endian), body. Encoding appends to a buffer; decoding is a
// pull parser over bytes as they arrive. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

#include "args.h"

namespace rpcarena {

enum class FrameType : uint8_t { kHeader = 0x01, kMessage = 0x02, kEnd = 0x03, kStatus = 0x04 };

inline constexpr size_t kFramePrefix = 5;
inline constexpr uint32_t kMaxFrameBody = 16778240;  // 16 MiB + 1 KiB

const char* frame_name(FrameType t);
const char* method_path(Shape shape);
// The shape of a HEADER body, or false for an unknown method.
bool shape_of_path(const char* data, size_t len, Shape* out);

void append_frame(std::string& out, FrameType type, const void* body, size_t len);
// Serializes `message` straight into `out` behind its prefix.
void append_message(std::string& out, FrameType type, const google::protobuf::MessageLite& message);

struct Frame {
  FrameType type;
  const uint8_t* body;  // valid until the next feed() or compact()
  uint32_t len;
};

class FrameReader {
 public:
  enum class Result { kFrame, kNeedMore, kError };
  void feed(const uint8_t* data, size_t len);
  // The next whole frame; kError (with `error` set) for an unknown type or an oversized body.
  Result next(Frame* frame, std::string* error);
  // Bytes received but not yet returned as frames (non-zero at FIN means a truncated frame).
  size_t pending() const { return buf_.size() - pos_; }
  // True when a whole frame is buffered.
  bool has_frame() const;

 private:
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace rpcarena
