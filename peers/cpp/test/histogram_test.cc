#include <gtest/gtest.h>

#include "histogram.h"
#include "intervals.h"

using namespace rpcarena;

namespace {
// The first four bytes of the decoded base64 text.
uint32_t cookie_of(const std::string& base64) {
  static const std::string abc =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t bits = 0;
  for (int i = 0; i < 6; ++i) bits = (bits << 6) | abc.find(base64[i]);
  // 6 characters = 36 bits; the first 32 are the cookie.
  return static_cast<uint32_t>(bits >> 4);
}
}  // namespace

TEST(Histogram, EncodesV2CompressedWithTheProtocolCookie) {
  Histogram h;
  for (int64_t v = 1000; v < 2000000; v += 997) h.record(v);
  std::string text = h.encode();
  EXPECT_EQ(text.rfind("HISTFAAA", 0), 0u) << text.substr(0, 16);
  EXPECT_EQ(cookie_of(text), 0x1c849314u);
  EXPECT_EQ(text.size() % 4, 0u);  // padded base64

  Histogram back = Histogram::decode(text);
  EXPECT_EQ(back.count(), h.count());
  EXPECT_EQ(back.value_at_percentile(50), h.value_at_percentile(50));
  EXPECT_EQ(back.max(), h.max());
}

TEST(Histogram, ClampsOutOfRangeValuesIntoTheCount) {
  Histogram h;
  h.record(0);
  h.record(kHistHighest * 2);
  EXPECT_EQ(h.count(), 2);
}

TEST(Intervals, MergeHotFlushedAndLateValues) {
  IntervalRecorder r(3);
  r.record(0, 100);
  r.record(0, 200);
  r.record(1, 300);  // flushes second 0
  r.record(0, 400);  // a straggler of second 0
  r.record(2, 500);
  r.record(1, 600);  // straggler of second 1
  EXPECT_EQ(r.count(0), 3u);
  EXPECT_EQ(r.count(1), 2u);
  EXPECT_EQ(r.count(2), 1u);
  for (size_t k = 0; k < 3; ++k) {
    Histogram h;
    r.add_to(k, h);
    EXPECT_EQ(static_cast<uint64_t>(h.count()), r.count(k)) << k;
  }
  Histogram h0;
  r.add_to(0, h0);
  EXPECT_EQ(h0.max(), 400);
}
