#!/usr/bin/env python3
"""Reference values for the unit tests of rpcarena-stats, computed independently of the Rust code.

Uses only the standard library: exact fractions and brute-force enumeration instead of scipy, so
that it runs anywhere. Run: python3 crates/stats/tests/reference.py
"""
from fractions import Fraction
from math import comb


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


if __name__ == "__main__":
    print("median confidence intervals (lo_rank, hi_rank, coverage)")
    for n, c in [(5, .95), (6, .95), (10, .95), (20, .95), (100, .95), (7, .99), (8, .99),
                 (4, .90), (5, .90), (5000, .95)]:
        print(f"  n={n} confidence={c}: {median_ci(n, c)}")
