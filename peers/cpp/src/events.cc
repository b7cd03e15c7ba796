#include "events.h"

#include <cstdio>
#include <mutex>

namespace rpcarena {

namespace {
std::mutex& out_mutex() {
  static std::mutex m;
  return m;
}
constexpr size_t kMaxLine = 1024 * 1024;
}  // namespace

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

void emit(const char* kind, const Json& fields) {
  Json event = Json::object();
  event["protocol"] = 1;
  event["event"] = kind;
  for (auto it = fields.begin(); it != fields.end(); ++it) event[it.key()] = it.value();
  // Invalid UTF-8 (a library message, say) is replaced rather than aborting the dump.
  std::string line = event.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (line.size() > kMaxLine) {
    throw Failure(phase::kMeasure, code::kInternal,
                  std::string("the ") + kind + " event would be " + std::to_string(line.size()) +
                      " bytes, above the protocol's 1 MiB line limit");
  }
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(out_mutex());
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

int emit_failure(const Failure& failure) {
  try {
    emit("error", Json{{"phase", failure.phase},
                       {"code", failure.code},
                       {"message", one_line(failure.what())}});
  } catch (const std::exception& e) {
    diag(std::string("could not print the error event: ") + e.what());
  }
  return (failure.phase == phase::kStartup && failure.code == code::kConfig) ? 2 : 1;
}

void diag(const std::string& text) {
  std::string line = "rpcarena-peer-cpp: " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace rpcarena
