#include "tally.h"

#include <mutex>
#include <thread>

#include "events.h"

namespace rpcarena {

Tally::Tally(const TallyOptions& o) : options(o), intervals(o.intervals) {
  if (o.open) {
    uncorrected = std::make_unique<Histogram>();
    send_lag = std::make_unique<Histogram>();
  }
}

void Tally::close() {
  gate.fetch_or(kClosed, std::memory_order_acq_rel);
  while ((gate.load(std::memory_order_acquire) & ~kClosed) != 0) std::this_thread::yield();
}

void Tally::note_failure(const std::string& code, const std::string& message, int64_t at,
                         uint64_t n) {
  failed += n;
  failures[code] += n;
  if (at < first_failure_at) {
    first_failure_at = at;
    first_failure = message;
    first_code = code;
  }
}

void Tally::record(int64_t intended, int64_t start, int64_t end, const OpResult& r) {
  if (end > last_end) last_end = end;
  if (send_lag) send_lag->record(start - intended);
  if (!r.ok) {
    note_failure(r.code, r.message, end, 1);
    return;
  }
  ++completed;
  segment(end, 1);
  requests += r.requests;
  responses += r.responses;
  request_bytes += r.request_bytes;
  response_bytes += r.response_bytes;
  int64_t latency = end - intended;
  histogram.record(latency);
  if (uncorrected) uncorrected->record(end - start);
  if (intervals.size() > 0) {
    int64_t offset = start - options.t0;
    size_t k = offset < 0 ? 0 : static_cast<size_t>(offset / 1000000000);
    intervals.record(k, latency);
  }
}

void Totals::add_failures(const std::string& code, uint64_t n, const std::string& message) {
  if (n == 0) return;
  failed += n;
  failures[code] += n;
  if (first_failure.empty()) {
    first_failure = message;
    first_code = code;
  }
}

Totals merge(const std::vector<Tally*>& tallies, const TallyOptions& options) {
  Totals t;
  if (options.open) {
    t.uncorrected = std::make_unique<Histogram>();
    t.send_lag = std::make_unique<Histogram>();
  }
  int64_t first_at = INT64_MAX;
  for (const Tally* x : tallies) {
    t.started += x->started;
    t.completed += x->completed;
    t.failed += x->failed;
    t.requests += x->requests;
    t.responses += x->responses;
    t.request_bytes += x->request_bytes;
    t.response_bytes += x->response_bytes;
    t.sent += x->sent;
    for (size_t k = 0; k < t.segments.size(); ++k) t.segments[k] += x->segments[k];
    for (const auto& [code, n] : x->failures) t.failures[code] += n;
    if (x->first_failure_at < first_at) {
      first_at = x->first_failure_at;
      t.first_failure = x->first_failure;
      t.first_code = x->first_code;
    }
    if (x->last_end > t.last_end) t.last_end = x->last_end;
    t.histogram.add(x->histogram);
    if (options.open) {
      t.uncorrected->add(*x->uncorrected);
      t.send_lag->add(*x->send_lag);
    }
  }
  for (size_t k = 0; k < options.intervals; ++k) {
    Histogram h;
    uint64_t n = 0;
    for (const Tally* x : tallies) {
      x->intervals.add_to(k, h);
      n += x->intervals.count(k);
    }
    t.intervals.emplace_back(n, h.encode());
  }
  return t;
}

namespace {
// Slots of threads that have exited, for reuse: gRPC's thread pool starts and ends threads over a
// long run, and a slot's data (a tally, server counters) may pass to the next thread that takes
// it, because the thread that used it is gone. The mutex orders the old owner's writes before the
// new owner's.
std::mutex& slot_mutex() {
  static std::mutex m;
  return m;
}
std::vector<int>& free_slots() {
  static std::vector<int> v;
  return v;
}
struct SlotHolder {
  int slot = -1;
  ~SlotHolder() {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(slot_mutex());
    free_slots().push_back(slot);
  }
};
}  // namespace

int thread_slot() {
  static int next = 0;
  thread_local SlotHolder holder;
  if (holder.slot < 0) {
    std::lock_guard<std::mutex> lock(slot_mutex());
    if (!free_slots().empty()) {
      holder.slot = free_slots().back();
      free_slots().pop_back();
    } else {
      holder.slot = next++;
    }
    if (holder.slot >= kMaxThreads) {
      diag("more than " + std::to_string(kMaxThreads) + " threads at once recorded operations; aborting");
      std::abort();
    }
  }
  return holder.slot;
}

}  // namespace rpcarena
