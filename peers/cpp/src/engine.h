// The load engine (docs/peer-protocol.md "Load models"): runs one phase (warmup or the measured
// window) of a load model over a ClientStack and returns its merged totals.
//
// The engine is callback-driven and thread-agnostic: a stack calls OpSink::op_done on whatever
// thread completes the operation (gRPC's callback threads, the QUIC loop), and the engine starts
// the lane's next operation right there. How each model runs:
//   closed, window   one Lane object per lane; its completion starts its next operation.
//   backpressure     a submitter fills up while the stack accepts a call (gRPC: always, up to the
//                    cap; QUIC: while stream credit is left), and refills on every completion and
//                    whenever the stack signals new credit.
//   send-saturation  one SaturationStream per stream.
//   open             a pacer thread (timer slack 1 ns, clock_nanosleep, then a short spin) keeps
//                    the intended schedule; a start finding every slot busy waits in a FIFO that
//                    completions drain (a mutex taken twice per operation).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "args.h"
#include "tally.h"
#include "transport.h"

namespace rpcarena {

class OpSink {
 public:
  virtual void op_done(OpResult&& r) = 0;

 protected:
  ~OpSink() = default;
};

// One client stream of send-saturation, as the stack sees it.
class SaturationSink {
 public:
  // Called when the stream is open and whenever the previous message was accepted: true to send
  // one more message (the first always; later ones while the window is open).
  virtual bool want_message() = 0;
  // The transport took the message that want_message() allowed.
  virtual void message_accepted() = 0;
  // The stream ended: r.ok when the summary confirmed exactly `sent` messages.
  virtual void stream_done(OpResult&& r) = 0;

 protected:
  ~SaturationSink() = default;
};

// One connection to the server, shared by every lane, running the configured workload.
class ClientStack {
 public:
  virtual ~ClientStack() = default;
  // Starts one operation of the configured shape; calls sink->op_done exactly once, on any thread
  // (possibly before start returns).
  virtual void start(uint64_t seq, OpSink* sink) = 0;
  // Backpressure: does the transport accept one more call right now?
  virtual bool accepts_call() { return true; }
  // Called (on the stack's context) when the transport may accept more calls.
  virtual void set_ready_hook(std::function<void()> hook) { (void)hook; }
  // Runs `fn` where this stack's callbacks run: inline (gRPC) or on its event loop (QUIC).
  virtual void post(std::function<void()> fn) { fn(); }
  // Opens one send-saturation client stream.
  virtual void start_saturation(SaturationSink* sink) = 0;
  virtual int connections() const { return 1; }
  // Transport statistics: where they come from ("tcp", "quic"; empty: the stack has none), and
  // every connection's reading now. read_transport may be called from any thread.
  virtual std::string transport() const { return ""; }
  virtual std::vector<ConnReading> read_transport() { return {}; }
  // Diagnostics for stderr when operations miss their bound: what is still in flight.
  virtual std::string describe_in_flight() { return ""; }
  // A short phrase for the timeout failure's message (zmq: the endpoint and the last id sent).
  virtual std::string timeout_detail() { return ""; }
  // 1.3: CPU time (CLOCK_THREAD_CPUTIME_ID) so far of the one thread that starts every operation,
  // where the stack has one (zmq's poll loop); -1 otherwise.
  virtual int64_t submit_cpu_ns() { return -1; }
};

// Wakes the client's main thread: the engine when a phase finishes, the stdin reader when a
// command arrives.
class Wakeup {
 public:
  void notify() {
    {
      std::lock_guard<std::mutex> lock(m_);
      ++generation_;
    }
    cv_.notify_all();
  }
  // Waits until `done()` or `until` (monotonic ns); returns done().
  bool wait_until(int64_t until, const std::function<bool()>& done);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
};

struct PhaseSpec {
  int64_t t0 = 0;
  int64_t window_ns = 0;  // deadline = t0 + window_ns
  int64_t bound_ns = 0;   // how long after the deadline admitted operations may take
  bool measure = false;   // keep per-second intervals
};

struct PhaseResult {
  Totals totals;
  bool abandoned = false;    // stop() asked to give up (SHUTDOWN)
  bool timed_out = false;    // the bound passed with operations still in flight
  int64_t drain_ns = 0;
  int64_t submit_cpu_ns = -1;  // the submitting thread's CPU over the phase, where the stack has one
  uint64_t max_in_flight = 0;
  uint64_t offered = 0;      // open
  uint64_t streams_opened = 0;  // send-saturation
};

// Runs one phase. `stop` is polled whenever the main thread wakes (SHUTDOWN on stdin); it
// returns early with abandoned = true.
PhaseResult run_phase(ClientStack& stack, const ClientArgs& args, const PhaseSpec& spec,
                      Wakeup& wakeup, const std::function<bool()>& stop);

// The validation operation: one operation with seq 0 on the first lane, bounded by `bound_ns`.
// Returns nullopt-like abandoned via `abandoned`.
OpResult run_single(ClientStack& stack, int64_t bound_ns, Wakeup& wakeup,
                    const std::function<bool()>& stop, bool* abandoned);

}  // namespace rpcarena
