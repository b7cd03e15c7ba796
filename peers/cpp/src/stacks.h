// The transport stacks, as the client and server lifecycles see them.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "args.h"
#include "engine.h"
#include "events.h"
#include "tally.h"

namespace rpcarena {

// What a server counts (the counters of the `window` and `stopped` events), per thread so that no
// cache line is shared on the hot path; summed when an event asks for them.
// 1.3: `commands` (one-way commands received and validated), `dropped` (zmq: replies not queued
// at the high-water mark; printed only by a stack that can drop, `with_dropped`) and the
// message of the first rejection (`first_rejection` of `window` and `stopped`).
class ServerCounters {
 public:
  explicit ServerCounters(bool with_dropped = false) : with_dropped_(with_dropped) {}
  void rpc() { slot().rpcs.fetch_add(1, std::memory_order_relaxed); }
  void request() { slot().requests.fetch_add(1, std::memory_order_relaxed); }
  void response() { slot().responses.fetch_add(1, std::memory_order_relaxed); }
  void command() { slot().commands.fetch_add(1, std::memory_order_relaxed); }
  void rejected() { slot().rejected.fetch_add(1, std::memory_order_relaxed); }
  // A rejection and its reason (kept when it is the first rejection or drop).
  void rejected(const std::string& why) {
    rejected();
    note_first(why);
  }
  void dropped(const std::string& why) {
    slot().dropped.fetch_add(1, std::memory_order_relaxed);
    note_first(why);
  }
  Json to_json() const;
  // "" until something was rejected or dropped with a reason.
  std::string first_rejection() const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> rpcs{0}, requests{0}, responses{0}, rejected{0}, commands{0}, dropped{0};
  };
  Slot& slot() { return slots_[thread_slot()]; }
  void note_first(const std::string& why);
  std::array<Slot, kMaxThreads> slots_;
  bool with_dropped_;
  std::atomic<bool> have_first_{false};
  mutable std::mutex first_mutex_;
  std::string first_;
};

class ServerStack {
 public:
  virtual ~ServerStack() = default;
  // The address actually bound, as the client passes it to --server.
  virtual std::string address() const = 0;
  // Closes the listener and every connection.
  virtual void stop() = 0;
  virtual Json counters() const = 0;
  // 1.3: the message of the first call, command or frame rejected (or reply dropped); "" if none.
  virtual std::string first_rejection() const { return ""; }
};

// Load --cert/--key and bind --listen; throw Failure (startup/config for the files, listen/config
// for the address).
std::unique_ptr<ServerStack> serve_grpc(const ServerArgs& args);
std::unique_ptr<ServerStack> serve_quic(const ServerArgs& args);
std::unique_ptr<ServerStack> serve_zmq(const ServerArgs& args);

// A connected client stack (TLS handshake done). Throws Failure(phase connect, code tls/connect/
// timeout). Returns nullptr when `stop()` became true while connecting.
class ClosableStack : public ClientStack {
 public:
  // Closes the connection cleanly (QUIC: CONNECTION_CLOSE "done").
  virtual void close() = 0;
};
std::unique_ptr<ClosableStack> connect_grpc(const ClientArgs& args, Wakeup& wakeup,
                                            const std::function<bool()>& stop);
std::unique_ptr<ClosableStack> connect_quic(const ClientArgs& args, Wakeup& wakeup,
                                            const std::function<bool()>& stop);
std::unique_ptr<ClosableStack> connect_zmq(const ClientArgs& args, Wakeup& wakeup,
                                           const std::function<bool()>& stop);

// Reads a whole file, or throws Failure(startup, config) naming `what` and the path.
std::string read_file(const std::string& what, const std::string& path);

}  // namespace rpcarena
