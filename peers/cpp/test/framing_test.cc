#include <gtest/gtest.h>

#include "framing.h"
#include "workload.h"

using namespace rpcarena;

// docs/stacks.md "Native framing", the example unary call.
TEST(Framing, EncodesTheDocumentedUnaryCall) {
  std::string out;
  const char* path = method_path(Shape::kUnary);
  append_frame(out, FrameType::kHeader, path, std::strlen(path));
  pb::Request r;
  r.set_seq(1);
  append_message(out, FrameType::kMessage, r);
  append_frame(out, FrameType::kEnd, nullptr, 0);
  std::string expect = std::string("\x01\x00\x00\x00\x25", 5) + path +
                       std::string("\x02\x00\x00\x00\x02\x08\x01", 7) +
                       std::string("\x03\x00\x00\x00\x00", 5);
  EXPECT_EQ(out, expect);
}

TEST(Framing, DecodesFramesAcrossArbitraryChunks) {
  std::string wire;
  append_frame(wire, FrameType::kHeader, "abc", 3);
  append_frame(wire, FrameType::kEnd, nullptr, 0);
  FrameReader reader;
  Frame f;
  std::string error;
  std::vector<FrameType> seen;
  for (char c : wire) {
    reader.feed(reinterpret_cast<const uint8_t*>(&c), 1);
    while (reader.next(&f, &error) == FrameReader::Result::kFrame) seen.push_back(f.type);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], FrameType::kHeader);
  EXPECT_EQ(seen[1], FrameType::kEnd);
  EXPECT_EQ(reader.pending(), 0u);
}

TEST(Framing, RefusesUnknownTypesAndOversizedBodies) {
  FrameReader a;
  const uint8_t unknown[] = {0x09, 0, 0, 0, 0};
  a.feed(unknown, sizeof unknown);
  Frame f;
  std::string error;
  EXPECT_EQ(a.next(&f, &error), FrameReader::Result::kError);
  EXPECT_NE(error.find("0x09"), std::string::npos);

  FrameReader b;
  const uint8_t huge[] = {0x02, 0x01, 0x00, 0x04, 0x01};  // 16778241 bytes
  b.feed(huge, sizeof huge);
  EXPECT_EQ(b.next(&f, &error), FrameReader::Result::kError);

  Shape s;
  EXPECT_TRUE(shape_of_path("/rpcarena.bench.v1.BenchService/Bidi", 36, &s));
  EXPECT_EQ(s, Shape::kBidi);
  EXPECT_FALSE(shape_of_path("/x", 2, &s));
}
