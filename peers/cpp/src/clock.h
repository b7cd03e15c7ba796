// The monotonic clock every measurement uses (CLOCK_MONOTONIC, nanoseconds; vDSO, ~20-40 ns).
#pragma once

#include <time.h>

#include <cstdint>

namespace rpcarena {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace rpcarena
