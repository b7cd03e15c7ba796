// Commands on stdin (docs/peer-protocol.md "Rules" and "Lifecycle"): one per line, START or
// SHUTDOWN, surrounding whitespace ignored; end of stdin means SHUTDOWN; anything else is kept as
// an unknown line so the state machine can answer it with a protocol error.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine.h"

namespace rpcarena {

struct Input {
  enum class Kind { kStart, kShutdown, kUnknown } kind;
  std::string line;  // kUnknown: the line as received
};

// Classifies one line (pure).
Input classify_line(const std::string& line);

// Reads stdin on its own thread from start(); every line wakes `wakeup`.
class Commands {
 public:
  explicit Commands(Wakeup& wakeup) : wakeup_(wakeup) {}
  void start();
  bool has_input();
  std::optional<Input> peek();
  std::optional<Input> pop();
  // Blocks until a command arrives.
  Input wait();

 private:
  Wakeup& wakeup_;
  std::mutex m_;
  std::deque<Input> queue_;
};

}  // namespace rpcarena
