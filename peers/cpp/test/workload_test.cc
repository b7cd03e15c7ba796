#include <gtest/gtest.h>

#include <cstdio>

#include "workload.h"

using namespace rpcarena;

namespace {
std::string hex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}
}  // namespace

// docs/peer-protocol.md "Payload kinds": the test vector Structured(1, 64).
TEST(Structured, MatchesTheProtocolTestVector) {
  pb::Structured s;
  fill_structured(&s, 1, 64);
  EXPECT_EQ(s.title(), "bcdefghijkl");
  EXPECT_EQ(s.created_unix_ms(), 1700000000001);
  ASSERT_EQ(s.items_size(), 1);
  EXPECT_EQ(s.items(0).name(), "item-0");
  EXPECT_EQ(s.attributes().at("seq"), "1");
  EXPECT_EQ(hex(s.SerializeAsString()),
            "0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f"
            "220562656e636822047461673022080a03736571120131");
}

TEST(Structured, EverySizeEncodesExactly) {
  for (uint64_t seq : {0ull, 7ull, 123456789ull, 18446744073709551615ull}) {
    for (uint32_t size = 0; size <= 600; ++size) {
      if (size == 1 || size == 2) continue;
      pb::Structured s;
      fill_structured(&s, seq, size);
      ASSERT_EQ(s.ByteSizeLong(), size) << "seq " << seq << " size " << size;
    }
  }
  for (uint32_t size : {4096u, 65536u, 1000003u, 16777216u}) {
    pb::Structured s;
    fill_structured(&s, 42, size);
    EXPECT_EQ(s.ByteSizeLong(), size);
  }
}

TEST(Validation, ResponsesAreCheckedBySeqLengthAndContent) {
  pb::Response r;
  build_response(&r, PayloadKind::kZeros, 5, 64);
  EXPECT_EQ(check_response(r, PayloadKind::kZeros, 5, 64), "");
  EXPECT_NE(check_response(r, PayloadKind::kZeros, 6, 64), "");  // wrong seq
  EXPECT_NE(check_response(r, PayloadKind::kZeros, 5, 65), "");  // wrong length
  r.mutable_payload()->at(10) = 1;
  EXPECT_NE(check_response(r, PayloadKind::kZeros, 5, 64).find("payload byte 10"), std::string::npos);

  pb::Response s;
  build_response(&s, PayloadKind::kStructured, 9, 300);
  EXPECT_EQ(check_response(s, PayloadKind::kStructured, 9, 300), "");
  s.mutable_body()->mutable_items(0)->set_score(1.5);
  EXPECT_NE(check_response(s, PayloadKind::kStructured, 9, 300).find("items[0]"), std::string::npos);
  EXPECT_NE(check_response(s, PayloadKind::kZeros, 9, 300), "");  // a body where zeros were asked
}

TEST(Validation, SummaryMustConfirmTheStream) {
  StreamCheck received;
  for (uint64_t i = 0; i < 3; ++i) {
    pb::Request r;
    build_request(&r, PayloadKind::kZeros, i, 100, 20, 0);
    ASSERT_EQ(received.next(r, Shape::kClientStream), "");
  }
  pb::Summary s;
  build_summary(&s, received);
  EXPECT_EQ(check_summary(s, PayloadKind::kZeros, 3, 100, 20), "");
  EXPECT_NE(check_summary(s, PayloadKind::kZeros, 4, 100, 20), "");
  EXPECT_NE(check_summary(s, PayloadKind::kZeros, 3, 99, 20), "");
}

// A unary response or a summary sent twice (the server fault extra-message) is invalid, and so is
// a call that ends with status OK short of its responses (missing-message).
TEST(Validation, ResponseCountIsExact) {
  EXPECT_EQ(check_one_more(0, 1, "response"), "");
  EXPECT_EQ(check_one_more(1, 1, "summary"), "more than 1 summary before the status");
  EXPECT_EQ(check_one_more(4, 5, "response"), "");
  EXPECT_EQ(check_one_more(5, 5, "response"), "more than 5 responses before the status");
  EXPECT_EQ(check_count_at_end(1, 1, "response"), "");
  EXPECT_EQ(check_count_at_end(0, 1, "summary"), "status OK after 0 of 1 summary");
  EXPECT_EQ(check_count_at_end(3, 5, "response"), "status OK after 3 of 5 responses");
}

TEST(ServerValidation, RefusesMalformedRequests) {
  pb::Request ok;
  build_request(&ok, PayloadKind::kZeros, 1, 32, 32, 4);
  EXPECT_EQ(check_request(ok, Shape::kServerStream), "");

  pb::Request nonzero = ok;
  nonzero.mutable_payload()->at(3) = 7;
  EXPECT_NE(check_request(nonzero, Shape::kUnary).find("payload byte 3"), std::string::npos);

  pb::Request big = ok;
  big.set_response_size(kMaxPayload + 1);
  EXPECT_NE(check_request(big, Shape::kUnary), "");

  pb::Request none = ok;
  none.set_response_messages(0);
  EXPECT_NE(check_request(none, Shape::kServerStream), "");
  EXPECT_EQ(check_request(none, Shape::kUnary), "");  // ignored by the other shapes

  pb::Request structured;
  build_request(&structured, PayloadKind::kStructured, 3, 200, 50, 0);
  EXPECT_EQ(check_request(structured, Shape::kUnary), "");
  structured.mutable_body()->set_title(std::string(structured.body().title().size(), 'z'));
  EXPECT_NE(check_request(structured, Shape::kUnary).find("title"), std::string::npos);

  pb::Request kind = ok;
  kind.set_payload_kind(static_cast<pb::PayloadKind>(2));
  EXPECT_NE(check_request(kind, Shape::kUnary).find("payload_kind"), std::string::npos);
}

TEST(ServerValidation, StreamsKeepSeqKindAndLength) {
  StreamCheck c;
  pb::Request r;
  build_request(&r, PayloadKind::kZeros, 0, 16, 8, 0);
  EXPECT_EQ(c.next(r, Shape::kBidi), "");
  build_request(&r, PayloadKind::kZeros, 2, 16, 8, 0);
  EXPECT_NE(c.next(r, Shape::kBidi).find("seq 2, expected 1"), std::string::npos);
  build_request(&r, PayloadKind::kZeros, 1, 17, 8, 0);
  EXPECT_NE(c.next(r, Shape::kBidi).find("differ"), std::string::npos);
  build_request(&r, PayloadKind::kZeros, 1, 16, 8, 0);
  EXPECT_EQ(c.next(r, Shape::kBidi), "");
  EXPECT_EQ(c.count(), 2u);
  EXPECT_EQ(c.payload_bytes(), 32u);
}
