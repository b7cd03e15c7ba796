#include "engine.h"

#include <sys/prctl.h>
#include <time.h>

#include <array>
#include <deque>
#include <thread>

#include "clock.h"
#include "events.h"
#include "schedule.h"

namespace rpcarena {

bool Wakeup::wait_until(int64_t until, const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    uint64_t seen = generation_;
    lock.unlock();
    if (done()) return true;
    int64_t left = until - now_ns();
    lock.lock();
    if (left <= 0) return done();
    if (generation_ == seen) {
      // Wake at least every 50 ms, so a predicate that depends on the clock is seen in time.
      cv_.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, 50000000)));
    }
  }
}

namespace {

class Run;

struct Lane final : OpSink {
  Run* run = nullptr;
  uint32_t index = 0;
  uint64_t k = 0;
  int64_t start = 0;
  void begin();
  void op_done(OpResult&& r) override;
};

struct BackpressureOp final : OpSink {
  BackpressureOp(Run* r, int64_t s) : run(r), start(s) {}
  Run* run;
  int64_t start;
  void op_done(OpResult&& r) override;
};

struct OpenOp final : OpSink {
  OpenOp(Run* r, int64_t i, int64_t s) : run(r), intended(i), start(s) {}
  Run* run;
  int64_t intended;
  int64_t start;
  void op_done(OpResult&& r) override;
};

struct SaturationStream final : SaturationSink {
  Run* run = nullptr;
  int64_t could_start = 0;
  std::atomic<uint64_t> sent{0};
  std::vector<uint64_t> samples;  // (interval << 42) | send time in ns
  std::atomic<bool> finished{false};
  bool want_message() override;
  void message_accepted() override;
  void stream_done(OpResult&& r) override;
};

constexpr int kValueBits = 42;  // 2^42 ns = 73 minutes, above the histogram's highest value
constexpr uint64_t kValueMask = (uint64_t{1} << kValueBits) - 1;

class Run {
 public:
  Run(ClientStack& s, const ClientArgs& a, const PhaseSpec& spec, Wakeup& w)
      : stack(s), args(a), t0(spec.t0), deadline(spec.t0 + spec.window_ns), wakeup(w) {
    options.open = a.load == Load::kOpen;
    options.t0 = spec.t0;
    options.segment_ns = spec.measure ? 0 : std::max<int64_t>(spec.window_ns / kSegments, 1);
    options.intervals = spec.measure ? static_cast<size_t>((spec.window_ns + 999999999) / 1000000000) : 0;
    for (auto& slot : slots) slot.store(nullptr);
  }

  // This thread's tally, entered; nullptr once the phase is closed. Pair with leave().
  Tally* enter() {
    int slot = thread_slot();
    Tally* t = slots[slot].load(std::memory_order_acquire);
    if (!t) {
      auto fresh = std::make_unique<Tally>(options);
      t = fresh.get();
      {
        std::lock_guard<std::mutex> lock(owned_mutex);
        owned.push_back(std::move(fresh));
      }
      slots[slot].store(t, std::memory_order_seq_cst);
      if (closed.load(std::memory_order_seq_cst)) return nullptr;
    }
    return t->enter() ? t : nullptr;
  }

  void op_started() {
    int64_t now_in = in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t seen = max_in_flight.load(std::memory_order_relaxed);
    while (now_in > seen && !max_in_flight.compare_exchange_weak(seen, now_in)) {
    }
    if (Tally* t = enter()) {
      ++t->started;
      t->leave();
    }
  }

  void record(int64_t intended, int64_t start, int64_t end, const OpResult& r) {
    if (!r.ok) any_failed.store(true, std::memory_order_relaxed);
    if (Tally* t = enter()) {
      t->record(intended, start, end, r);
      t->leave();
    }
    if (in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1 && end >= deadline) wakeup.notify();
  }

  void release() {
    if (active.fetch_sub(1, std::memory_order_acq_rel) == 1) wakeup.notify();
  }

  bool done() const {
    return active.load(std::memory_order_acquire) == 0 && in_flight.load(std::memory_order_acquire) == 0;
  }

  bool stopping(int64_t now) const {
    return now >= deadline || abandoned.load(std::memory_order_relaxed);
  }

  // backpressure ------------------------------------------------------------------------------
  void pump() {
    if (pump_requests.fetch_add(1, std::memory_order_acq_rel) != 0) return;
    do {
      for (;;) {
        int64_t now = now_ns();
        if (stopping(now) || any_failed.load(std::memory_order_relaxed)) {
          if (!submitter_done.exchange(true)) release();
          break;
        }
        if (in_flight.load(std::memory_order_relaxed) >= cap) break;
        if (!stack.accepts_call()) break;
        auto* op = new BackpressureOp(this, now);
        op_started();
        stack.start(next_seq.fetch_add(1, std::memory_order_relaxed), op);
      }
    } while (pump_requests.fetch_sub(1, std::memory_order_acq_rel) != 1);
  }

  // open ----------------------------------------------------------------------------------------
  void launch(int64_t intended) {
    auto* op = new OpenOp(this, intended, now_ns());
    op_started();
    stack.start(next_seq.fetch_add(1, std::memory_order_relaxed), op);
  }

  void dispatch(int64_t intended) {
    std::unique_lock<std::mutex> lock(open_mutex);
    if (open_busy < cap) {
      ++open_busy;
      lock.unlock();
      stack.post([this, intended] { launch(intended); });
    } else {
      pending.push_back(intended);
    }
  }

  void open_next() {
    std::unique_lock<std::mutex> lock(open_mutex);
    if (!pending.empty() && !stopping(now_ns())) {
      int64_t intended = pending.front();
      pending.pop_front();
      lock.unlock();
      launch(intended);
    } else {
      --open_busy;
    }
  }

  void generate() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    Arrivals arrivals(args.arrival, args.rate, args.seed);
    int64_t lead = pacing_lead_ns(args.rate);
    for (;;) {
      int64_t at = t0 + arrivals.next();
      if (at >= deadline) break;
      offered.fetch_add(1, std::memory_order_relaxed);
      // Sleep in slices of at most 50 ms (so SHUTDOWN is seen), then spin to the moment.
      for (;;) {
        if (abandoned.load(std::memory_order_relaxed)) break;
        int64_t wake = at - lead;
        int64_t now = now_ns();
        if (now >= wake) break;
        int64_t until = std::min(wake, now + 50000000);
        timespec ts{static_cast<time_t>(until / 1000000000), static_cast<long>(until % 1000000000)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      }
      while (now_ns() < at) {
        __builtin_ia32_pause();
      }
      if (abandoned.load(std::memory_order_relaxed)) break;
      dispatch(at);
    }
    {
      std::lock_guard<std::mutex> lock(open_mutex);
      pending.clear();  // intended starts still waiting at the deadline are not started
    }
    // Released where the starts run, after every start posted before it: the phase must not
    // look finished while a start is still on its way.
    stack.post([this] { release(); });
  }

  // send-saturation -------------------------------------------------------------------------
  void saturation_done(SaturationStream& s, const OpResult& r) {
    int64_t end = now_ns();
    uint64_t sent = s.sent.load();
    if (!r.ok) any_failed.store(true, std::memory_order_relaxed);
    Tally* t = enter();
    if (!t) return;
    if (end > t->last_end) t->last_end = end;
    t->sent += sent;
    if (r.ok) {
      t->segment(end, sent);
      for (uint64_t packed : s.samples) {
        int64_t value = static_cast<int64_t>(packed & kValueMask);
        t->histogram.record(value);
        if (t->intervals.size() > 0) t->intervals.record(packed >> kValueBits, value);
      }
      t->completed += sent;
      t->requests += sent;
      t->request_bytes += sent * args.request_size;
      t->responses += 1;
      t->response_bytes += args.response_size;
    } else {
      t->note_failure(r.code, r.message, end, std::max<uint64_t>(1, sent));
    }
    t->leave();
  }

  // closing ---------------------------------------------------------------------------------
  std::vector<Tally*> close_all() {
    closed.store(true, std::memory_order_seq_cst);
    std::vector<Tally*> out;
    for (auto& slot : slots) {
      Tally* t = slot.load(std::memory_order_seq_cst);
      if (t) {
        t->close();
        out.push_back(t);
      }
    }
    return out;
  }

  ClientStack& stack;
  const ClientArgs& args;
  const int64_t t0;
  const int64_t deadline;
  Wakeup& wakeup;
  TallyOptions options;
  int64_t cap = 0;
  std::atomic<int64_t> active{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> max_in_flight{0};
  std::atomic<bool> abandoned{false};
  std::atomic<bool> any_failed{false};
  std::atomic<bool> closed{false};
  std::atomic<uint64_t> next_seq{0};
  std::atomic<uint64_t> offered{0};
  std::array<std::atomic<Tally*>, kMaxThreads> slots;
  std::mutex owned_mutex;
  std::vector<std::unique_ptr<Tally>> owned;
  std::vector<Lane> lanes;
  std::vector<std::unique_ptr<SaturationStream>> streams;
  // backpressure
  std::atomic<int> pump_requests{0};
  std::atomic<bool> submitter_done{false};
  // open
  std::mutex open_mutex;
  int64_t open_busy = 0;
  std::deque<int64_t> pending;
};

void Lane::begin() {
  int64_t now = now_ns();
  if (run->stopping(now)) {
    run->release();
    return;
  }
  start = now;
  uint64_t seq = index + k * run->lanes.size();
  ++k;
  run->op_started();
  run->stack.start(seq, this);
}

void Lane::op_done(OpResult&& r) {
  int64_t end = now_ns();
  bool ok = r.ok;
  run->record(start, start, end, r);
  if (!ok) {
    run->release();  // a lane stops after its first failure
    return;
  }
  begin();
}

void BackpressureOp::op_done(OpResult&& r) {
  int64_t end = now_ns();
  Run* owner = run;
  owner->record(start, start, end, r);
  delete this;
  owner->pump();
}

void OpenOp::op_done(OpResult&& r) {
  int64_t end = now_ns();
  Run* owner = run;
  // A start waiting for this slot goes first, so the operations in flight never drop to zero
  // (the phase would look finished) between this end and that start.
  owner->open_next();
  owner->record(intended, start, end, r);
  delete this;
}

bool SaturationStream::want_message() {
  int64_t now = now_ns();
  if (sent.load(std::memory_order_relaxed) > 0 && run->stopping(now)) return false;
  could_start = now;
  return true;
}

void SaturationStream::message_accepted() {
  int64_t now = now_ns();
  uint64_t value = static_cast<uint64_t>(now - could_start);
  if (value > kValueMask) value = kValueMask;
  int64_t offset = could_start - run->t0;
  uint64_t k = offset < 0 ? 0 : static_cast<uint64_t>(offset / 1000000000);
  samples.push_back((k << kValueBits) | value);
  sent.fetch_add(1, std::memory_order_relaxed);
  could_start = now;
}

void SaturationStream::stream_done(OpResult&& r) {
  if (finished.exchange(true)) return;
  run->saturation_done(*this, r);
  run->release();
}

// Starts the load model: the lanes, the submitter, the generator or the streams. Returns the
// generator's thread (open load only).
std::thread start_load(Run* run, ClientStack& stack, const ClientArgs& args) {
  std::thread generator;
  // send-saturation on send (1.3): S lanes, one command in flight each, as the closed model runs.
  bool lanes = args.load == Load::kClosed || args.load == Load::kWindow ||
               (args.load == Load::kSendSaturation && args.shape == Shape::kSend);
  switch (lanes ? Load::kClosed : args.load) {
    case Load::kClosed:
    case Load::kWindow: {
      uint32_t n = args.lanes();
      run->lanes.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        run->lanes[i].run = run;
        run->lanes[i].index = i;
      }
      run->active.store(n);
      stack.post([run] {
        for (Lane& lane : run->lanes) lane.begin();
      });
      break;
    }
    case Load::kBackpressure:
      run->cap = args.max_in_flight;
      run->active.store(1);  // the submitter
      stack.set_ready_hook([run] { run->pump(); });
      stack.post([run] { run->pump(); });
      break;
    case Load::kOpen:
      run->cap = args.concurrency;
      run->active.store(1);  // the generator
      generator = std::thread([run] { run->generate(); });
      break;
    case Load::kSendSaturation: {
      uint32_t n = args.streams;
      for (uint32_t i = 0; i < n; ++i) {
        auto s = std::make_unique<SaturationStream>();
        s->run = run;
        run->streams.push_back(std::move(s));
      }
      run->active.store(n);
      stack.post([run] {
        for (auto& s : run->streams) run->stack.start_saturation(s.get());
      });
      break;
    }
  }
  return generator;
}

enum class PhaseEnd { kDone, kTimedOut, kStopped };

// Waits until the phase is done, its bound passes or stop() says so.
PhaseEnd wait_for_end(Run* run, ClientStack& stack, const ClientArgs& args, Wakeup& wakeup,
                      int64_t bound_at, const std::function<bool()>& stop) {
  bool poked = false;
  for (;;) {
    if (run->done()) return PhaseEnd::kDone;
    if (stop()) return PhaseEnd::kStopped;
    int64_t now = now_ns();
    if (now >= bound_at) return PhaseEnd::kTimedOut;
    int64_t until = bound_at;
    if (args.load == Load::kBackpressure && !poked) until = std::min(until, run->deadline);
    wakeup.wait_until(until, [&] { return run->done() || stop(); });
    if (args.load == Load::kBackpressure && !poked && now_ns() >= run->deadline) {
      poked = true;  // release the submitter even if no completion arrives after the deadline
      stack.post([run] { run->pump(); });
    }
  }
}

std::string bound_text(const ClientArgs& args, const PhaseSpec& spec) {
  if (args.load == Load::kSendSaturation) return "the settle bound (--settle-ms, at most --drain-ms)";
  return spec.measure ? "the drain bound (--drain-ms)" : "the warmup's drain bound (--drain-ms)";
}

// Counts what never ended by the bound as timeouts (a stream without a summary, or an operation
// started but not finished) and records the phase's concurrency.
void count_unfinished(Run* run, const ClientArgs& args, const std::string& bound, PhaseResult& result) {
  Totals& t = result.totals;
  if (args.load == Load::kSendSaturation && args.shape != Shape::kSend) {
    uint64_t missing = 0;
    for (auto& s : run->streams) {
      if (!s->finished.exchange(true)) {
        uint64_t sent = s->sent.load();
        t.sent += sent;
        missing += std::max<uint64_t>(1, sent);
      }
    }
    t.add_failures(code::kTimeout, missing,
                   std::to_string(missing) + " messages of streams without a summary by " + bound);
    result.streams_opened = run->streams.size();
    result.max_in_flight = run->streams.size();
  } else {
    uint64_t finished = t.completed + t.failed;
    uint64_t missing = t.started > finished ? t.started - finished : 0;
    std::string detail = missing > 0 ? run->stack.timeout_detail() : "";
    t.add_failures(code::kTimeout, missing,
                   std::to_string(missing) + " operations did not finish within " + bound +
                       (detail.empty() ? "" : ": " + detail));
    result.max_in_flight = static_cast<uint64_t>(run->max_in_flight.load());
  }
}

}  // namespace

PhaseResult run_phase(ClientStack& stack, const ClientArgs& args, const PhaseSpec& spec,
                      Wakeup& wakeup, const std::function<bool()>& stop) {
  // Never freed: a late completion (after the drain bound, or after SHUTDOWN) may still reach it.
  Run* run = new Run(stack, args, spec, wakeup);
  int64_t bound_ns = spec.bound_ns;
  if (args.load == Load::kSendSaturation) {
    bound_ns = std::min<int64_t>(bound_ns, static_cast<int64_t>(args.settle_ms) * 1000000);
  }
  int64_t bound_at = run->deadline + bound_ns;
  int64_t cpu_at_start = stack.submit_cpu_ns();
  std::thread generator = start_load(run, stack, args);

  PhaseResult result;
  PhaseEnd end = wait_for_end(run, stack, args, wakeup, bound_at, stop);
  if (end == PhaseEnd::kStopped) {
    run->abandoned.store(true);
    if (generator.joinable()) generator.detach();
    result.abandoned = true;
    return result;
  }
  result.timed_out = end == PhaseEnd::kTimedOut;
  if (result.timed_out) {
    run->abandoned.store(true);
    std::string what = stack.describe_in_flight();
    diag("operations still in flight at the bound:" + (what.empty() ? std::string(" (no detail)") : what));
  }
  if (generator.joinable()) generator.join();
  std::vector<Tally*> tallies = run->close_all();
  result.totals = merge(tallies, run->options);
  count_unfinished(run, args, bound_text(args, spec), result);
  result.offered = run->offered.load();
  int64_t cpu_at_end = stack.submit_cpu_ns();
  if (cpu_at_start >= 0 && cpu_at_end >= cpu_at_start) result.submit_cpu_ns = cpu_at_end - cpu_at_start;
  if (result.timed_out) {
    result.drain_ns = bound_ns;
  } else {
    int64_t drain = result.totals.last_end - run->deadline;
    result.drain_ns = std::min<int64_t>(std::max<int64_t>(drain, 0), bound_ns);
  }
  return result;
}

namespace {
struct SingleSink final : OpSink {
  std::mutex m;
  bool done = false;
  OpResult result;
  Wakeup* wakeup = nullptr;
  void op_done(OpResult&& r) override {
    {
      std::lock_guard<std::mutex> lock(m);
      result = std::move(r);
      done = true;
    }
    wakeup->notify();
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(m);
    return done;
  }
};
}  // namespace

OpResult run_single(ClientStack& stack, int64_t bound_ns, Wakeup& wakeup,
                    const std::function<bool()>& stop, bool* abandoned) {
  auto* sink = new SingleSink();  // leaked if the operation never ends
  sink->wakeup = &wakeup;
  *abandoned = false;
  stack.post([&stack, sink] { stack.start(0, sink); });
  int64_t until = now_ns() + bound_ns;
  for (;;) {
    if (sink->finished()) break;
    if (stop()) {
      *abandoned = true;
      return OpResult::failure(code::kInternal, "abandoned");
    }
    if (now_ns() >= until) {
      return OpResult::failure(code::kTimeout, "the validation operation took longer than " +
                                                   std::to_string(bound_ns / 1000000000) + " s");
    }
    wakeup.wait_until(until, [&] { return sink->finished() || stop(); });
  }
  OpResult r = std::move(sink->result);
  delete sink;
  return r;
}

}  // namespace rpcarena
