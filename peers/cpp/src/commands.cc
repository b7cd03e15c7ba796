#include "commands.h"

#include <iostream>

namespace rpcarena {

Input classify_line(const std::string& line) {
  size_t b = line.find_first_not_of(" \t\r\n\f\v");
  size_t e = line.find_last_not_of(" \t\r\n\f\v");
  std::string word = b == std::string::npos ? "" : line.substr(b, e - b + 1);
  if (word == "START") return {Input::Kind::kStart, line};
  if (word == "SHUTDOWN") return {Input::Kind::kShutdown, line};
  if (word == "WINDOW START") return {Input::Kind::kWindowStart, line};
  if (word == "WINDOW END") return {Input::Kind::kWindowEnd, line};
  return {Input::Kind::kUnknown, line};
}

const char* window_edge(Input::Kind kind) {
  if (kind == Input::Kind::kWindowStart) return "start";
  if (kind == Input::Kind::kWindowEnd) return "end";
  return nullptr;
}

void Commands::start() {
  std::thread([this] {
    std::string line;
    while (std::getline(std::cin, line)) {
      Input in = classify_line(line);
      {
        std::lock_guard<std::mutex> lock(m_);
        queue_.push_back(in);
      }
      wakeup_.notify();
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.push_back({Input::Kind::kShutdown, "(end of stdin)"});
    }
    wakeup_.notify();
  }).detach();
}

bool Commands::has_input() {
  std::lock_guard<std::mutex> lock(m_);
  return !queue_.empty();
}

std::optional<Input> Commands::peek() {
  std::lock_guard<std::mutex> lock(m_);
  if (queue_.empty()) return std::nullopt;
  return queue_.front();
}

std::optional<Input> Commands::pop() {
  std::lock_guard<std::mutex> lock(m_);
  if (queue_.empty()) return std::nullopt;
  Input in = queue_.front();
  queue_.pop_front();
  return in;
}

Input Commands::wait() {
  for (;;) {
    if (auto in = pop()) return *in;
    wakeup_.wait_until(INT64_MAX / 2, [this] { return has_input(); });
  }
}

}  // namespace rpcarena
