// The grpc-cq client's one application thread (docs/stacks.md "grpc-cq"): it owns one
// grpc::CompletionQueue, drains it, and runs everything posted to it, so every call of the load
// model is submitted and completed on this thread and no other (submit_cpu_ns is its CPU time).
//
// Each turn of the pump: run the turn hook (backpressure's submitter, which may start one call
// per turn: take_credit()), then one AsyncNext on the queue. AsyncNext returns at once when the
// hook submitted something (so the submitter yields to the completion pump after every submit,
// as the reference's backpressure pattern does), and otherwise waits up to 50 ms for a completion
// or a post. A post from another thread (the engine's main thread, the open model's pacer) wakes
// a waiting AsyncNext with a grpc::Alarm set to fire at once: the way gRPC's own API wakes a
// completion-queue thread.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

namespace rpcarena {

class CqPump {
 public:
  // A completion-queue tag: done(ok) runs on the pump thread with AsyncNext's `ok`.
  class Tag {
   public:
    virtual void done(bool ok) = 0;

   protected:
    ~Tag() = default;
  };

  CqPump();
  // Shuts the queue down and joins the thread (every call must have completed).
  ~CqPump();
  CqPump(const CqPump&) = delete;
  CqPump& operator=(const CqPump&) = delete;

  grpc::CompletionQueue* cq() { return &cq_; }
  // Runs `fn` on the pump thread, after everything posted before it. Any thread.
  void post(std::function<void()> fn);
  // Pump thread: the hook run at the start of every turn (empty: none).
  void set_turn_hook(std::function<void()> hook) { hook_ = std::move(hook); }
  // Pump thread: true at most once per turn (backpressure: "the transport accepts one call").
  bool take_credit();
  bool on_pump_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // CPU time so far of the pump thread (its CLOCK_THREAD_CPUTIME_ID, read from any thread).
  int64_t cpu_ns() const;
  // Turns so far (for the tests).
  uint64_t turns() const { return turns_.load(std::memory_order_relaxed); }

 private:
  class Wake;
  void run();
  void run_posted();

  grpc::CompletionQueue cq_;
  std::function<void()> hook_;
  bool credit_ = true;
  std::atomic<uint64_t> turns_{0};
  std::atomic<bool> stopping_{false};
  std::mutex m_;
  std::deque<std::function<void()>> posted_;
  bool wake_armed_ = false;
  clockid_t cpu_clock_{};
  std::thread thread_;
};

}  // namespace rpcarena
