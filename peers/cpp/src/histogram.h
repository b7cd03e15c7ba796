// Latency histograms: HdrHistogram_c with the protocol's parameters (values in ns, 1 to
// 3,600,000,000,000, 3 significant digits), encoded as V2 compressed + base64 (cookie 0x1c849314,
// text starting "HISTFAAA") by the library's own hdr_log_encode.
#pragma once

#include <cstdint>
#include <string>

struct hdr_histogram;

namespace rpcarena {

inline constexpr int64_t kHistLowest = 1;
inline constexpr int64_t kHistHighest = 3600000000000;  // one hour in ns
inline constexpr int kHistDigits = 3;

class Histogram {
 public:
  Histogram();
  ~Histogram();
  Histogram(Histogram&& other) noexcept;
  Histogram& operator=(Histogram&& other) noexcept;
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Values below 1 count as 1 and above the highest trackable value as that value, so no
  // completed operation is ever lost from the count.
  void record(int64_t value_ns) { record_n(value_ns, 1); }
  void record_n(int64_t value_ns, int64_t count);
  void add(const Histogram& other);
  void reset();
  int64_t count() const;
  int64_t value_at_percentile(double p) const;
  int64_t max() const;
  std::string encode() const;  // base64 of the V2 compressed encoding

  // Every recorded (value, count) pair, lowest first: `fn(value, count)` with the bucket's lowest
  // equivalent value, so recording it again lands in the same bucket.
  template <typename Fn>
  void for_each(Fn fn) const;

  // Decodes an encoding made by any HdrHistogram library (tests use it for round trips).
  static Histogram decode(const std::string& base64);
  hdr_histogram* raw() const { return h_; }

 private:
  explicit Histogram(hdr_histogram* h) : h_(h) {}
  hdr_histogram* h_ = nullptr;
};

// Iteration helper implemented in histogram.cc (keeps hdr headers out of this one).
void histogram_for_each(const hdr_histogram* h, void (*fn)(void*, int64_t, int64_t), void* ctx);

template <typename Fn>
void Histogram::for_each(Fn fn) const {
  histogram_for_each(
      h_, [](void* ctx, int64_t v, int64_t c) { (*static_cast<Fn*>(ctx))(v, c); }, &fn);
}

}  // namespace rpcarena
