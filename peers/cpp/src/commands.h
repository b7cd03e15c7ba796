// Commands on stdin (docs/peer-protocol.md "Rules" and "Lifecycle"): one per line, START,
// SHUTDOWN and (servers, 1.2) WINDOW START and WINDOW END, surrounding whitespace ignored; end of
// stdin means SHUTDOWN; anything else is kept as an unknown line so the state machine can answer
// it with a protocol error. Each role's state machine decides what a command means in it.
#pragma once

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine.h"

namespace rpcarena {

struct Input {
  enum class Kind { kStart, kShutdown, kWindowStart, kWindowEnd, kUnknown } kind;
  std::string line;  // the line as received
};

// Classifies one line (pure). The two words of a window command are separated by one space.
Input classify_line(const std::string& line);

// The `edge` of the `window` event answering a window command; nullptr for any other kind.
const char* window_edge(Input::Kind kind);

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
