// The two transport stacks, as the client and server lifecycles see them.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "args.h"
#include "engine.h"
#include "events.h"
#include "tally.h"

namespace rpcarena {

// What a server counts (the counters of the `window` and `stopped` events), per thread so that no
// cache line is shared on the hot path; summed when an event asks for them.
class ServerCounters {
 public:
  void rpc() { slot().rpcs.fetch_add(1, std::memory_order_relaxed); }
  void request() { slot().requests.fetch_add(1, std::memory_order_relaxed); }
  void response() { slot().responses.fetch_add(1, std::memory_order_relaxed); }
  void rejected() { slot().rejected.fetch_add(1, std::memory_order_relaxed); }
  Json to_json() const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> rpcs{0}, requests{0}, responses{0}, rejected{0};
  };
  Slot& slot() { return slots_[thread_slot()]; }
  std::array<Slot, kMaxThreads> slots_;
};

class ServerStack {
 public:
  virtual ~ServerStack() = default;
  // The address actually bound, as the client passes it to --server.
  virtual std::string address() const = 0;
  // Closes the listener and every connection.
  virtual void stop() = 0;
  virtual Json counters() const = 0;
};

// Load --cert/--key and bind --listen; throw Failure (startup/config for the files, listen/config
// for the address).
std::unique_ptr<ServerStack> serve_grpc(const ServerArgs& args);
std::unique_ptr<ServerStack> serve_quic(const ServerArgs& args);

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

// Reads a whole file, or throws Failure(startup, config) naming `what` and the path.
std::string read_file(const std::string& what, const std::string& path);

}  // namespace rpcarena
