#include "intervals.h"

namespace rpcarena {

void IntervalRecorder::resize(size_t intervals) {
  flushed_.resize(intervals);
  late_.resize(intervals);
  counts_.resize(intervals, 0);
}

void IntervalRecorder::flush_hot() {
  if (!hot_used_) return;
  auto& list = flushed_[hot_k_];
  hot_->for_each([&list](int64_t v, int64_t c) { list.emplace_back(v, c); });
  hot_->reset();
  hot_used_ = false;
}

void IntervalRecorder::record(size_t k, int64_t value) {
  if (counts_.empty()) return;
  if (k >= counts_.size()) k = counts_.size() - 1;
  ++counts_[k];
  if (!hot_) hot_ = std::make_unique<Histogram>();
  if (!hot_used_ || k == hot_k_) {
    hot_k_ = k;
    hot_used_ = true;
    hot_->record(value);
  } else if (k > hot_k_) {
    flush_hot();
    hot_k_ = k;
    hot_used_ = true;
    hot_->record(value);
  } else {
    ++late_[k][value];
  }
}

void IntervalRecorder::add_to(size_t k, Histogram& out) const {
  if (k >= counts_.size()) return;
  for (const auto& [v, c] : flushed_[k]) out.record_n(v, c);
  for (const auto& [v, c] : late_[k]) out.record_n(v, c);
  if (hot_used_ && hot_k_ == k) out.add(*hot_);
}

}  // namespace rpcarena
