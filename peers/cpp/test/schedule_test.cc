#include <gtest/gtest.h>

#include <cmath>

#include "schedule.h"

using namespace rpcarena;

TEST(Arrivals, ConstantStartsAreComputedFromTheIndex) {
  Arrivals a(Arrival::kConstant, 3.0, 0);
  EXPECT_EQ(a.next(), 0);
  EXPECT_EQ(a.next(), 333333333);
  EXPECT_EQ(a.next(), 666666666);
  EXPECT_EQ(a.next(), 1000000000);
  // offered over a 5 s window at 1000/s: ceil(5 x 1000) = 5000 starts before the deadline
  Arrivals b(Arrival::kConstant, 1000.0, 0);
  int n = 0;
  while (b.next() < 5000000000) ++n;
  EXPECT_EQ(n, 5000);
}

TEST(Arrivals, PoissonIsSeededAndHasTheRightMean) {
  Arrivals a(Arrival::kPoisson, 1000.0, 7), b(Arrival::kPoisson, 1000.0, 7), c(Arrival::kPoisson, 1000.0, 8);
  EXPECT_EQ(a.next(), 0);
  EXPECT_EQ(b.next(), 0);
  c.next();
  bool differs = false;
  int64_t last = 0;
  for (int i = 1; i < 20000; ++i) {
    int64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs = differs || x != c.next();
    EXPECT_GE(x, last);
    last = x;
  }
  EXPECT_TRUE(differs);
  double mean_gap_ms = static_cast<double>(last) / 19999 / 1e6;
  EXPECT_NEAR(mean_gap_ms, 1.0, 0.05);
}

TEST(Pacing, LeadShrinksAboveOneThousandPerSecond) {
  EXPECT_EQ(pacing_lead_ns(100), 150000);
  EXPECT_EQ(pacing_lead_ns(1000), 150000);
  EXPECT_EQ(pacing_lead_ns(10000), 20000);
}
