#!/usr/bin/python3
"""Fits the coefficients of Emitter::erf (emit_elementwise.cc) and prints them as the
hex floats that file holds, with the error of the f32 evaluation on a sample of f32
patterns (kernel_erf_test sweeps the generated kernel itself).

  a < 1:         a + a·P(a²), P of degree 5, fitted to erf(a)/a - 1
  1 ≤ a < CUT:   Q(a - 2.5), Q of degree 12, fitted to erf(a)
  a ≥ CUT:       1 (CUT = the smallest float whose erf rounds to 1)

Weighted least squares on Chebyshev nodes, reweighted by the error (Lawson's iteration
toward the minimax fit). Needs numpy; run with Debian's /usr/bin/python3.
"""
import math

import numpy as np

f32 = np.float32
erf = np.vectorize(math.erf)
SPLIT, MID, NODES = 1.0, 2.5, 3000


def lawson(fn, xs, powers, iters=200):
    y = fn(xs)
    a = np.stack([xs**p for p in powers], 1)
    w = np.ones_like(xs) / len(xs)
    best = None
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)
        e = np.abs(a @ c - y)
        if best is None or e.max() < best[0]:
            best = (e.max(), c)
        w = w * e
        w /= w.sum()
    return [f32(v) for v in best[1]]


def nodes(lo, hi):
    k = np.arange(NODES)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / NODES)


def cut():
    lo, hi = 3.0, 5.0
    for _ in range(60):
        m = (lo + hi) / 2
        lo, hi = (lo, m) if f32(math.erf(m)) == f32(1) else (m, hi)
    c = f32(hi)
    return c if float(c) >= hi else np.nextafter(c, f32(10))


def fma(a, b, c):  # f32 fma: the f64 product of two floats is exact
    return (a.astype(np.float64) * b + np.float64(c)).astype(f32)


def horner(c, v):
    p = np.full_like(v, c[-1])
    for ci in c[-2::-1]:
        p = fma(p, v, ci)
    return p


def model(x, small, big, c):
    a = np.abs(x)
    s = horner(small, (a * a).astype(f32))
    r = np.where(a < f32(SPLIT), fma_a(a, s), horner(big, (a - f32(MID)).astype(f32)))
    return np.copysign(np.where(a >= c, f32(1), r), x)


def fma_a(a, p):  # a·p + a with one rounding
    return (a.astype(np.float64) * p + a.astype(np.float64)).astype(f32)


def main():
    c = cut()
    small = lawson(lambda x: erf(x) / x - 1, nodes(1e-4, SPLIT), [2 * i for i in range(6)])
    big = lawson(lambda u: erf(u + MID), nodes(SPLIT - MID, float(c) - MID), range(13))
    print("kSmall", ", ".join(float(v).hex() for v in small))
    print("kBig  ", ", ".join(float(v).hex() for v in big))
    print("cut   ", float(c).hex(), float(c))
    lo, hi = np.frombuffer(f32(0.5).tobytes(), np.uint32)[0], np.frombuffer(f32(4.0).tobytes(), np.uint32)[0]
    x = np.arange(lo, hi, 13, dtype=np.uint32).view(f32)
    err = np.abs(model(x, small, big, c).astype(np.float64) - erf(x.astype(np.float64)))
    print("max |error| on every 13th pattern of [0.5, 4): %.3g at %.9g" % (err.max(), x[err.argmax()]))


if __name__ == "__main__":
    main()
