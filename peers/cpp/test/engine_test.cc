// The load engine over a fake stack whose operations finish on another thread after ~50 us: every
// model's counts must add up as docs/peer-protocol.md "sample" defines them.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "clock.h"
#include "engine.h"

using namespace rpcarena;

namespace {

class FakeStack final : public ClientStack {
 public:
  explicit FakeStack(bool fail_all = false) : fail_all_(fail_all) {
    worker_ = std::thread([this] { run(); });
  }
  ~FakeStack() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  void start(uint64_t, OpSink* sink) override {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back({now_ns() + 50000, sink, nullptr});
    cv_.notify_all();
  }
  void start_saturation(SaturationSink* sink) override {
    std::lock_guard<std::mutex> lock(m_);
    queue_.push_back({now_ns(), nullptr, sink});
    cv_.notify_all();
  }

 private:
  struct Item {
    int64_t at;
    OpSink* sink;
    SaturationSink* sat;
  };
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
      if (queue_.empty()) {
        cv_.wait(lock);
        continue;
      }
      Item item = queue_.front();
      queue_.pop_front();
      lock.unlock();
      while (now_ns() < item.at) std::this_thread::yield();
      if (item.sat) {
        uint64_t sent = 0;
        while (item.sat->want_message()) {
          item.sat->message_accepted();
          ++sent;
        }
        OpResult r;
        r.ok = true;
        item.sat->stream_done(std::move(r));
      } else {
        OpResult r = fail_all_ ? OpResult::failure("rpc", "status 13: no") : OpResult();
        if (!fail_all_) {
          r.ok = true;
          r.requests = r.responses = 1;
          r.request_bytes = r.response_bytes = 10;
        }
        item.sink->op_done(std::move(r));
      }
      lock.lock();
    }
  }
  bool fail_all_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread worker_;
};

ClientArgs args_for(Load load) {
  ClientArgs a;
  a.load = load;
  a.concurrency = 4;
  a.in_flight = 6;
  a.max_in_flight = 5;
  a.streams = 3;
  a.settle_ms = 1000;
  a.rate = 2000;
  a.request_size = 10;
  a.response_size = 10;
  return a;
}

PhaseResult run(ClientStack& stack, const ClientArgs& a) {
  Wakeup wakeup;
  PhaseSpec spec;
  spec.t0 = now_ns();
  spec.window_ns = 300000000;  // 0.3 s
  spec.bound_ns = 2000000000;
  spec.measure = true;
  return run_phase(stack, a, spec, wakeup, [] { return false; });
}

void expect_consistent(const PhaseResult& r) {
  const Totals& t = r.totals;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(t.failed, 0u) << t.first_failure;
  EXPECT_GT(t.completed, 0u);
  EXPECT_EQ(static_cast<uint64_t>(t.histogram.count()), t.completed);
  ASSERT_EQ(t.intervals.size(), 1u);
  EXPECT_EQ(t.intervals[0].first, t.completed);
  EXPECT_LE(r.drain_ns, 2000000000);
}

}  // namespace

TEST(Engine, ClosedWindowAndBackpressureCountsAddUp) {
  for (Load load : {Load::kClosed, Load::kWindow, Load::kBackpressure}) {
    FakeStack stack;
    ClientArgs a = args_for(load);
    PhaseResult r = run(stack, a);
    expect_consistent(r);
    EXPECT_EQ(r.totals.requests, r.totals.completed);
    EXPECT_EQ(r.totals.request_bytes, r.totals.completed * 10);
    if (load == Load::kWindow) EXPECT_EQ(r.max_in_flight, 6u);
    if (load == Load::kBackpressure) EXPECT_EQ(r.max_in_flight, 5u);
  }
}

TEST(Engine, OpenModelKeepsItsSchedule) {
  FakeStack stack;
  ClientArgs a = args_for(Load::kOpen);
  a.rate = 200;
  PhaseResult r = run(stack, a);
  expect_consistent(r);
  EXPECT_EQ(r.offered, 60u);  // 0.3 s at 200/s
  // On a busy machine a start may still wait at the deadline (then it is not started).
  EXPECT_LE(r.totals.completed, 60u);
  EXPECT_GE(r.totals.completed, 54u);
  EXPECT_EQ(static_cast<uint64_t>(r.totals.send_lag->count()), r.totals.completed);
  EXPECT_EQ(static_cast<uint64_t>(r.totals.uncorrected->count()), r.totals.completed);
}

TEST(Engine, SendSaturationCountsMessages) {
  FakeStack stack;
  PhaseResult r = run(stack, args_for(Load::kSendSaturation));
  expect_consistent(r);
  EXPECT_EQ(r.totals.sent, r.totals.completed);
  EXPECT_EQ(r.totals.responses, 3u);
  EXPECT_EQ(r.streams_opened, 3u);
}

TEST(Engine, ALaneStopsAfterItsFirstFailure) {
  FakeStack stack(/*fail_all=*/true);
  PhaseResult r = run(stack, args_for(Load::kClosed));
  EXPECT_EQ(r.totals.failed, 4u);  // one per lane
  EXPECT_EQ(r.totals.failures.at("rpc"), 4u);
  EXPECT_EQ(r.totals.first_failure, "status 13: no");
}
