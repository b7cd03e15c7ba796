#include "histogram.h"

#include <cstdlib>
#include <new>
#include <stdexcept>

extern "C" {
#include <hdr_histogram.h>
#include <hdr_histogram_log.h>
}

namespace rpcarena {

Histogram::Histogram() {
  if (hdr_init(kHistLowest, kHistHighest, kHistDigits, &h_) != 0) throw std::bad_alloc();
}

Histogram::~Histogram() {
  if (h_) hdr_close(h_);
}

Histogram::Histogram(Histogram&& other) noexcept : h_(other.h_) { other.h_ = nullptr; }

Histogram& Histogram::operator=(Histogram&& other) noexcept {
  if (this != &other) {
    if (h_) hdr_close(h_);
    h_ = other.h_;
    other.h_ = nullptr;
  }
  return *this;
}

void Histogram::record_n(int64_t value_ns, int64_t count) {
  if (value_ns < kHistLowest) value_ns = kHistLowest;
  if (value_ns > kHistHighest) value_ns = kHistHighest;
  hdr_record_values(h_, value_ns, count);
}

void Histogram::add(const Histogram& other) { hdr_add(h_, other.h_); }
void Histogram::reset() { hdr_reset(h_); }
int64_t Histogram::count() const { return h_->total_count; }
int64_t Histogram::value_at_percentile(double p) const { return hdr_value_at_percentile(h_, p); }
int64_t Histogram::max() const { return hdr_max(h_); }

std::string Histogram::encode() const {
  char* text = nullptr;
  int rc = hdr_log_encode(h_, &text);
  if (rc != 0 || text == nullptr) {
    throw std::runtime_error(std::string("HdrHistogram encoding failed: ") + hdr_strerror(rc));
  }
  std::string out(text);
  std::free(text);
  return out;
}

Histogram Histogram::decode(const std::string& base64) {
  hdr_histogram* h = nullptr;
  std::string copy = base64;
  int rc = hdr_log_decode(&h, copy.data(), copy.size());
  if (rc != 0 || h == nullptr) {
    throw std::runtime_error(std::string("HdrHistogram decoding failed: ") + hdr_strerror(rc));
  }
  return Histogram(h);
}

void histogram_for_each(const hdr_histogram* h, void (*fn)(void*, int64_t, int64_t), void* ctx) {
  hdr_iter iter;
  hdr_iter_recorded_init(&iter, h);
  while (hdr_iter_next(&iter)) {
    fn(ctx, hdr_lowest_equivalent_value(h, iter.value), iter.count);
  }
}

}  // namespace rpcarena
