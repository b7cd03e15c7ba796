#!/usr/bin/env python3
"""Reference values for the unit tests of rpcarena-stats, computed independently of the Rust code.

Uses only the standard library: exact fractions and brute-force enumeration instead of scipy, so
that it runs anywhere. Run: python3 crates/stats/tests/reference.py
"""
from fractions import Fraction
from itertools import combinations
from math import comb, erfc, sqrt


def median_ci(n, confidence):
    """Largest l with 1 - 2 P(Binomial(n, 1/2) <= l - 1) >= confidence: (l, n + 1 - l, coverage)."""
    conf = Fraction(confidence).limit_denominator(10**9)
    tail, best = Fraction(0), None
    for k in range(n):
        tail += Fraction(comb(n, k), 2**n)
        l = k + 1
        if 1 - 2 * tail < conf or 2 * l > n:
            break
        best = (l, n + 1 - l, float(1 - 2 * tail))
    return best


def u_stat(x, y):
    """U of x: pairs with x > y, ties counting 1/2."""
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x for b in y)


def exact_p(x, y):
    """Two-sided p by enumerating every split of the pooled values (assumes no ties)."""
    pooled = list(x) + list(y)
    u = u_stat(x, y)
    us = []
    for idx in combinations(range(len(pooled)), len(x)):
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        us.append(u_stat(xs, ys))
    lower = sum(1 for v in us if v <= u) / len(us)
    upper = sum(1 for v in us if v >= u) / len(us)
    return u, min(1.0, 2 * min(lower, upper))


def normal_p(x, y):
    """Normal approximation with tie correction and continuity correction."""
    n1, n2 = len(x), len(y)
    n = n1 + n2
    u = u_stat(x, y)
    counts = {}
    for v in list(x) + list(y):
        counts[v] = counts.get(v, 0) + 1
    tie = sum(t**3 - t for t in counts.values())
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = max(abs(u - n1 * n2 / 2) - 0.5, 0) / sqrt(var)
    return u, min(1.0, erfc(z / sqrt(2)))


if __name__ == "__main__":
    print("median confidence intervals (lo_rank, hi_rank, coverage)")
    for n, c in [(5, .95), (6, .95), (10, .95), (20, .95), (100, .95), (7, .99), (8, .99),
                 (4, .90), (5, .90), (5000, .95)]:
        print(f"  n={n} confidence={c}: {median_ci(n, c)}")

    print("Mann-Whitney exact (U, p)")
    for x, y in [([1, 2, 3], [4, 5, 6]),
                 ([19, 22, 16, 29, 24], [20, 11, 17, 12]),
                 ([1.1, 2.2, 3.3, 4.4], [0.5, 5.5, 6.6, 7.7, 8.8]),
                 ([10, 12, 14, 16, 18, 20], [11, 21, 22, 23, 24, 25]),
                 ([3, 1], [2])]:
        print(f"  {x} vs {y}: {exact_p(x, y)}")
    print("Mann-Whitney normal approximation (U, p)")
    for x, y in [([19, 22, 16, 29, 24], [20, 11, 17, 12]),
                 ([1, 2, 2, 3, 3, 3, 4], [3, 4, 4, 5, 5, 6]),
                 ([i * 2 for i in range(60)], [i * 2 + 21 for i in range(41)]),
                 ([5] * 4, [5] * 4)]:
        print(f"  {x} vs {y}: {normal_p(x, y)}")
