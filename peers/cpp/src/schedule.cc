#include "schedule.h"

#include <algorithm>
#include <cmath>

namespace rpcarena {

Arrivals::Arrivals(Arrival kind, double rate, uint64_t seed) : kind_(kind), rate_(rate), rng_(seed) {}

int64_t Arrivals::next() {
  uint64_t i = i_++;
  if (kind_ == Arrival::kConstant) {
    return static_cast<int64_t>(std::floor(static_cast<double>(i) * (1e9 / rate_)));
  }
  double at = poisson_s_;
  double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  poisson_s_ += -std::log(1.0 - u) / rate_;
  return static_cast<int64_t>(std::floor(at * 1e9));
}

int64_t pacing_lead_ns(double rate) {
  double gap_ns = 1e9 / rate;
  return static_cast<int64_t>(std::min(150000.0, gap_ns / 5.0));
}

}  // namespace rpcarena
