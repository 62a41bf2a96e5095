#!/usr/bin/env python3
"""Independent reference computation of the statistics of docs/metrics.md "Statistics".

Written from the page's definitions, not from the Go code:
- Mann-Whitney U and its two-sided p-value: scipy.stats.mannwhitneyu(x, y, method="auto",
  use_continuity=True, alternative="two-sided") (SciPy 1.10.1, Debian's python3-scipy).
- Hodges-Lehmann shift and its interval: the median of all differences y_j - x_i, and order
  statistics k and N+1-k of them, where k comes from the exact null distribution of U obtained by
  ENUMERATING every split of the pooled ranks (itertools.combinations, no recurrence) when there
  are no ties and the smaller sample has at most 8 values (SciPy's rule), and otherwise from the normal
  approximation k = floor(N/2 + 1/2 - z sigma), z = scipy.stats.norm.ppf((1+confidence)/2).
- Percentile bootstrap of a quantile: the EXACT bootstrap distribution, by enumerating all n^n
  resamples of a tiny sample (no random numbers), inverted at (1-confidence)/2 and
  (1+confidence)/2; the Go code's Monte Carlo interval must land on the same atom, so the file
  records how far the inversion point is from the atom's edges.

    /usr/bin/python3 testdata/significance_reference.py testdata/significance.json
"""
import itertools
import json
import math
import random
import sys

import numpy as np
from scipy import stats


def exact_u_distribution(nx, ny):
    """P(U = k) by enumerating which ranks (1..n, no ties) belong to x."""
    n = nx + ny
    counts = {}
    for chosen in itertools.combinations(range(1, n + 1), nx):
        u = sum(chosen) - nx * (nx + 1) // 2
        counts[u] = counts.get(u, 0) + 1
    total = math.comb(n, nx)
    return [counts.get(k, 0) / total for k in range(nx * ny + 1)]


def has_ties(x, y):
    pooled = list(x) + list(y)
    return len(set(pooled)) != len(pooled)


def tie_term(x, y):
    _, t = np.unique(np.array(list(x) + list(y)), return_counts=True)
    return float(np.sum(t.astype(float) ** 3 - t))


def hodges_lehmann(x, y, confidence):
    d = sorted(c - b for b in x for c in y)
    n = len(d)
    est = float(np.median(d))
    alpha = 1 - confidence
    nx, ny = len(x), len(y)
    if not has_ties(x, y) and min(nx, ny) <= 8:
        dist = exact_u_distribution(nx, ny)
        k = 1
        for cand in range(1, (n + 1) // 2 + 1):
            if 2 * sum(dist[:cand]) <= alpha + 1e-15:
                k = cand
        exact = True
    else:
        nn = nx + ny
        sigma = math.sqrt(nx * ny / 12 * ((nn + 1) - tie_term(x, y) / (nn * (nn - 1))))
        z = stats.norm.ppf(1 - alpha / 2)
        k = min(max(1, math.floor(n / 2 + 0.5 - z * sigma)), (n + 1) // 2)
        exact = False
    return {"estimate": est, "low": d[k - 1], "high": d[n - k], "k": k, "exact": exact}


def type7(sorted_xs, p):
    h = (len(sorted_xs) - 1) * p
    lo = math.floor(h)
    if lo >= len(sorted_xs) - 1:
        return sorted_xs[-1]
    return sorted_xs[lo] + (h - lo) * (sorted_xs[lo + 1] - sorted_xs[lo])


def exact_bootstrap(xs, q, confidence):
    """The exact bootstrap distribution of the type-7 q-quantile, inverted at both tails."""
    n = len(xs)
    counts = {}
    for r in itertools.product(xs, repeat=n):
        v = type7(sorted(r), q)
        counts[v] = counts.get(v, 0) + 1
    atoms = sorted(counts)
    total = n ** n
    out = {}
    for name, p in (("low", (1 - confidence) / 2), ("high", (1 + confidence) / 2)):
        cum = 0.0
        for a in atoms:
            below = cum
            cum += counts[a] / total
            if cum >= p:
                out[name] = a
                out[name + "_margin"] = min(p - below, cum - p)
                break
    return out


def main(path):
    rng = random.Random(21)
    a30 = [round(rng.gauss(20, 3), 1) for _ in range(30)]
    b30 = [round(rng.gauss(20, 3), 1) for _ in range(30)]
    c40 = [rng.gauss(20, 2) for _ in range(40)]
    d40 = [rng.gauss(24, 2) for _ in range(40)]
    pairs = [
        # SciPy mannwhitneyu documentation example (ages of males and females).
        ("scipy-doc-ages", [19, 22, 16, 29, 24], [20, 11, 17, 12]),
        # R's ?wilcox.test two-sample example (x: 10 values, y: 5 values).
        ("r-doc-wilcox", [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46], [1.15, 0.88, 0.90, 0.74, 1.21]),
        ("tiny-one-each", [1.0], [2.0]),
        ("tiny-ties", [1, 2, 2, 3], [2, 3, 3, 4, 5]),
        ("identical-constant", [5, 5, 5, 5, 5], [5, 5, 5, 5, 5]),
        ("identical-samples", list(range(1, 11)), list(range(1, 11))),
        ("same-distribution-rounded-30", a30, b30),
        ("shift-4-of-40", c40, d40),
        # At SciPy's boundary: 8 values on the smaller side is still exact, 9 and 9 is not.
        ("exact-8-vs-12", [round(v, 3) for v in c40[:8]], [round(v, 3) for v in d40[:12]]),
        ("normal-9-vs-9", [round(v, 3) for v in c40[:9]], [round(v, 3) for v in d40[:9]]),
    ]
    mw, hl = [], []
    for name, x, y in pairs:
        r = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto", use_continuity=True)
        p = float(r.pvalue)
        if math.isnan(p):  # SciPy leaves p undefined when the pooled sample has no variance
            p = 1.0
        exact = not has_ties(x, y) and min(len(x), len(y)) <= 8
        mw.append({"name": name, "x": x, "y": y, "u": float(r.statistic), "p": p, "exact": exact})
        if len(x) * len(y) > 1:
            for conf in (0.95, 0.99):
                hl.append({"name": name, "x": x, "y": y, "confidence": conf, **hodges_lehmann(x, y, conf)})
    boot = []
    for name, xs, q in (("median-of-6", [3.0, 1.0, 4.0, 1.5, 9.0, 2.6], 0.5), ("p90-of-6", [3.0, 1.0, 4.0, 1.5, 9.0, 2.6], 0.9),
                        ("constant-5", [7.0] * 5, 0.99)):
        boot.append({"name": name, "samples": xs, "q": q, "confidence": 0.9, **exact_bootstrap(xs, q, 0.9)})
    with open(path, "w") as f:
        json.dump({"source": "schemas/metric/testdata/significance_reference.py, SciPy " + __import__("scipy").__version__,
                   "mann_whitney": mw, "hodges_lehmann": hl, "bootstrap": boot}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
