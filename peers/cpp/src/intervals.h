// Per-second interval histograms of one recording thread (docs/peer-protocol.md "Intervals").
//
// A full HdrHistogram with the protocol's range takes ~190 KB, so one per second per thread would
// not fit a long window. Operations mostly complete in the order of the second they started in,
// so the recorder keeps one full histogram for the newest second it has seen; when a later second
// arrives it flushes that histogram's non-empty buckets into a compact (value, count) list. A
// completion for an older second (a slow straggler) goes straight into that second's exact-value
// map. The sample merges every thread's recorder into one histogram per second at the end.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "histogram.h"

namespace rpcarena {

class IntervalRecorder {
 public:
  explicit IntervalRecorder(size_t intervals = 0) { resize(intervals); }
  void resize(size_t intervals);
  size_t size() const { return counts_.size(); }

  // Records `value` for interval k (< size(); larger k are clamped to the last interval).
  void record(size_t k, int64_t value);
  uint64_t count(size_t k) const { return counts_[k]; }
  // Adds interval k's values into `out`.
  void add_to(size_t k, Histogram& out) const;

 private:
  void flush_hot();
  std::unique_ptr<Histogram> hot_;
  size_t hot_k_ = 0;
  bool hot_used_ = false;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> flushed_;
  std::vector<std::map<int64_t, int64_t>> late_;
  std::vector<uint64_t> counts_;
};

}  // namespace rpcarena
