// Events on stdout (docs/peer-protocol.md "Events"): one JSON object per line, flushed per line,
// and the failure type every phase throws. stdout carries nothing else; diagnostics go to stderr.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace rpcarena {

using Json = nlohmann::ordered_json;

namespace code {
inline constexpr const char* kConfig = "config";
inline constexpr const char* kTls = "tls";
inline constexpr const char* kConnect = "connect";
inline constexpr const char* kRpc = "rpc";
inline constexpr const char* kInvalid = "invalid";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kProtocol = "protocol";
inline constexpr const char* kInternal = "internal";
}  // namespace code

namespace phase {
inline constexpr const char* kStartup = "startup";
inline constexpr const char* kListen = "listen";
inline constexpr const char* kConnect = "connect";
inline constexpr const char* kValidate = "validate";
inline constexpr const char* kWarmup = "warmup";
inline constexpr const char* kArmed = "armed";
inline constexpr const char* kMeasure = "measure";
inline constexpr const char* kServe = "serve";
inline constexpr const char* kShutdown = "shutdown";
}  // namespace phase

// Why the peer cannot go on: printed as an `error` event, then the process exits (2 for
// startup/config, 1 otherwise).
struct Failure : std::runtime_error {
  Failure(std::string phase_, std::string code_, const std::string& message)
      : std::runtime_error(message), phase(std::move(phase_)), code(std::move(code_)) {}
  std::string phase;
  std::string code;
};

// A counter as the protocol writes it: a decimal string.
inline std::string counter(uint64_t value) { return std::to_string(value); }

// One line of text for an event message (newlines and tabs become spaces).
std::string one_line(std::string text);

// Prints one event: {"protocol":1,"event":kind, ...fields}. Thread-safe; flushes. Throws
// Failure(internal) if the line would exceed the protocol's 1 MiB.
void emit(const char* kind, const Json& fields = Json::object());

// Prints the `error` event of `failure` and returns the exit code the protocol gives it.
int emit_failure(const Failure& failure);

// A diagnostic line on stderr, prefixed with the peer's name.
void diag(const std::string& text);

}  // namespace rpcarena
