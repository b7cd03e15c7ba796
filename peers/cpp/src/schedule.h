// The open model's intended start schedule (docs/peer-protocol.md "open"): pure arithmetic, so
// the tests run it on a fake clock.
//
// constant: start i at floor(i x (1e9 / R)) ns after t0, computed from i (not by adding gaps).
// poisson:  the first start at t0, then exponential gaps of mean 1/R: gap = -ln(1 - U) / R, with
//           U uniform in [0, 1) from std::mt19937_64 seeded with --seed (the top 53 bits of each
//           64-bit draw, times 2^-53). The C++ standard fixes mt19937_64's output for a seed, so
//           the schedule is the same on every platform.
#pragma once

#include <cstdint>
#include <random>

#include "args.h"

namespace rpcarena {

class Arrivals {
 public:
  Arrivals(Arrival kind, double rate, uint64_t seed);
  // Offset from t0, in ns, of the next intended start (0 for the first).
  int64_t next();
  uint64_t index() const { return i_; }

 private:
  Arrival kind_;
  double rate_;
  std::mt19937_64 rng_;
  uint64_t i_ = 0;
  double poisson_s_ = 0;  // seconds after t0 of the next Poisson start
};

// How early the pacer wakes before an intended start and spins to it: 150 us at rates up to
// 1,000/s, less above so that spinning stays under 20% of a core (a fifth of the mean gap).
int64_t pacing_lead_ns(double rate);

}  // namespace rpcarena
