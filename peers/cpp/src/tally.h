// What one thread recorded during one phase of the load engine, and the merge of every thread's
// tally into the sample's totals.
//
// Every thread that completes operations (gRPC's callback threads, the QUIC loop) records into its
// own Tally: no lock and no shared cache line on the hot path. A tally's `gate` lets the engine
// close a phase at its drain bound: a recorder enters the gate (one uncontended atomic add on
// its own tally), and once the engine has closed it, late completions are dropped instead of
// racing the merge.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "histogram.h"
#include "intervals.h"

namespace rpcarena {

struct OpResult {
  bool ok = false;
  std::string code;     // when !ok: an error code of docs/peer-protocol.md "Error codes"
  std::string message;  // when !ok
  uint64_t requests = 0, responses = 0, request_bytes = 0, response_bytes = 0;

  static OpResult failure(const char* code, std::string message) {
    OpResult r;
    r.code = code;
    r.message = std::move(message);
    return r;
  }
};

// 1.3 armed.warmup_segments: completions counted per tenth of the warmup.
inline constexpr int64_t kSegments = 10;

struct TallyOptions {
  bool open = false;       // keep the uncorrected and send-lag histograms
  size_t intervals = 0;    // per-second intervals of the window (0: none)
  int64_t t0 = 0;
  int64_t segment_ns = 0;  // warmup: a tenth of it (0: no segments)
};

struct Tally {
  explicit Tally(const TallyOptions& o);

  // Returns false when the phase is closed; otherwise the caller records and then calls leave().
  bool enter() {
    if (gate.fetch_add(1, std::memory_order_acq_rel) & kClosed) {
      gate.fetch_sub(1, std::memory_order_acq_rel);
      return false;
    }
    return true;
  }
  void leave() { gate.fetch_sub(1, std::memory_order_release); }
  // Closes the gate and waits for recorders inside it.
  void close();

  // One finished operation: intended and actual start, end (ns, monotonic).
  void record(int64_t intended, int64_t start, int64_t end, const OpResult& r);
  void note_failure(const std::string& code, const std::string& message, int64_t at, uint64_t n);
  // `n` completions at `end` in their tenth of the warmup (the drain counts in the last).
  void segment(int64_t end, uint64_t n) {
    if (options.segment_ns <= 0) return;
    int64_t k = (end - options.t0) / options.segment_ns;
    segments[static_cast<size_t>(std::clamp<int64_t>(k, 0, kSegments - 1))] += n;
  }

  static constexpr uint64_t kClosed = uint64_t{1} << 63;
  std::atomic<uint64_t> gate{0};
  TallyOptions options;
  uint64_t started = 0, completed = 0, failed = 0;
  uint64_t requests = 0, responses = 0, request_bytes = 0, response_bytes = 0;
  uint64_t sent = 0;  // send-saturation
  std::array<uint64_t, kSegments> segments{};
  std::map<std::string, uint64_t> failures;
  std::string first_failure;
  std::string first_code;
  int64_t first_failure_at = INT64_MAX;
  int64_t last_end = 0;
  Histogram histogram;
  std::unique_ptr<Histogram> uncorrected;
  std::unique_ptr<Histogram> send_lag;
  IntervalRecorder intervals;
};

// Every thread's tally merged.
struct Totals {
  uint64_t started = 0, completed = 0, failed = 0;
  uint64_t requests = 0, responses = 0, request_bytes = 0, response_bytes = 0, sent = 0;
  std::array<uint64_t, kSegments> segments{};
  std::map<std::string, uint64_t> failures;
  std::string first_failure;
  std::string first_code;
  int64_t last_end = 0;
  Histogram histogram;
  std::unique_ptr<Histogram> uncorrected;
  std::unique_ptr<Histogram> send_lag;
  std::vector<std::pair<uint64_t, std::string>> intervals;  // completed, encoded histogram

  void add_failures(const std::string& code, uint64_t n, const std::string& message);
};

Totals merge(const std::vector<Tally*>& tallies, const TallyOptions& options);

// A small stable index per thread (0, 1, 2, ...), for per-thread slots.
int thread_slot();
inline constexpr int kMaxThreads = 512;

}  // namespace rpcarena
