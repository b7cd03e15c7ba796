// The quic stack's shared pieces: its settings (docs/stacks.md "quic"), the GnuTLS set-up of both
// roles, and the event loop (epoll + timerfd + eventfd) both roles run on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rpcarena {

inline constexpr uint64_t kQuicWindow = 16 * 1024 * 1024;
inline constexpr uint64_t kQuicMaxStreams = 10000;
inline constexpr int kUdpBuffer = 8 * 1024 * 1024;
inline constexpr uint64_t kQuicIdleMs = 30000;
inline constexpr uint64_t kQuicKeepAliveMs = 10000;
inline constexpr const char* kAlpn = "rpcarena/1";

std::vector<std::string> quic_deviations();

}  // namespace rpcarena
