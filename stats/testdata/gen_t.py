"""Writes t_quantiles.json: Student t quantiles (scipy.stats.t.ppf) and 95%
intervals of sample means (scipy.stats.t.interval), the fixture of
stats.TQuantile and stats.MeanCI.

Run from this folder with scipy installed: python gen_t.py
"""
import json

import numpy as np
from scipy import stats

quantiles = []
for df in [1, 2, 3, 4, 5, 7, 10, 19, 20, 29, 30, 50, 99, 100, 1000]:
    for p in [0.975, 0.95, 0.995, 0.6, 0.025]:
        quantiles.append({"p": p, "df": df, "q": float(stats.t.ppf(p, df))})
rng = np.random.default_rng(3)
intervals = []
for n in [2, 3, 5, 10, 40]:
    xs = [round(float(x), 3) for x in rng.normal(10, 3, n)]
    m = float(np.mean(xs))
    se = float(stats.sem(xs))
    lo, hi = stats.t.interval(0.95, n - 1, loc=m, scale=se)
    intervals.append({"xs": xs, "mean": m, "half": float(hi - m)})
with open("t_quantiles.json", "w") as f:
    json.dump({"quantiles": quantiles, "intervals": intervals}, f, indent=1)
    f.write("\n")
