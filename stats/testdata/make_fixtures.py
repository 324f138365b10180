"""Fixtures for stats' tournament statistics, computed once with
scipy and statsmodels (independently of the Go code) and kept here:

    python stats/testdata/make_fixtures.py [NAME ...]

(with NAMEs, only those fixtures are written: spearman, effect, elo, nct, r2).

spearman.json: pairs with ties and scipy.stats.spearmanr.
effect.json:   two samples; Cohen's d with the pooled SD; its exact 90% and
               95% intervals by inverting the noncentral t (scipy.stats.nct);
               statsmodels' ttost_ind (pooled variance) at three bounds given
               in units of the pooled SD; Student t CDF values (scipy).
elo.json:      games between requesters and holders; Elo ratings (start
               1500, K 32, requester's expected score 1/(1+10^((H-R)/400)))
               after the games in the given order, and their average over
               all 720 orders.
nct.json:      the noncentral t distribution function (scipy.stats.nct.cdf)
               at df 1-200 over t and noncentrality from -8 to 30 (the
               points where scipy answers NaN, far in a tail, left out), and the
               exact 90% and 95% intervals of Cohen's d for pairs of sample
               sizes from 2+2 (df 2) to 101+101 (df 200), found by brentq on
               a bracket widened until it holds the root.
r2.json:       games of a 6-agent round robin with holder and requester
               dummies (one per agent, no reference level), a framing column
               and three features (one constant, one a multiple of another),
               and R² after each block in two orders, each R² from
               numpy.linalg.lstsq on an intercept and the columns so far
               (rank-deficient sets fitted by least squares as they are).
"""
import itertools
import json
import os
import sys

import numpy as np
from scipy import optimize, stats
from statsmodels.stats.weightstats import ttost_ind

HERE = os.path.dirname(os.path.abspath(__file__))


def spearman():
    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(0, 1, 15), 1)  # ties
    y = -0.7 * x + rng.normal(0, 0.2, 15)
    y[3] = y[4]
    cases = [{"x": x.tolist(), "y": y.tolist()},
             {"x": [1, 2, 3, 4, 5], "y": [5, 6, 7, 8, 7]},
             {"x": [0.0, 0.0, 0.1, 0.5, 0.5, 0.9], "y": [0.1, 0.2, 0.15, 0.6, 0.4, 0.99]}]
    for c in cases:
        c["rho"] = float(stats.spearmanr(c["x"], c["y"]).statistic)
    return cases


def d_interval(d, n1, n2, level):
    """Exact interval for Cohen's d by inverting the noncentral t."""
    k = np.sqrt(n1 * n2 / (n1 + n2))
    t = d * k
    df = n1 + n2 - 2
    a = (1 - level) / 2
    lo = optimize.brentq(lambda nc: stats.nct.sf(t, df, nc) - a, t - 8, t + 8)
    hi = optimize.brentq(lambda nc: stats.nct.cdf(t, df, nc) - a, t - 8, t + 8)
    return lo / k, hi / k


def effect():
    rng = np.random.default_rng(2)
    out = []
    for n1, n2, shift in ((524, 525, -0.02), (40, 35, 0.3), (12, 15, 0.0)):
        x1 = np.clip(rng.beta(0.4, 1.2, n1) + shift, 0, 1)
        x2 = np.clip(rng.beta(0.4, 1.2, n2), 0, 1)
        sp = np.sqrt(((n1 - 1) * x1.var(ddof=1) + (n2 - 1) * x2.var(ddof=1)) / (n1 + n2 - 2))
        d = (x1.mean() - x2.mean()) / sp
        c = {"x1": x1.tolist(), "x2": x2.tolist(), "d": float(d), "sd_pooled": float(sp),
             "ci90": list(d_interval(d, n1, n2, 0.90)), "ci95": list(d_interval(d, n1, n2, 0.95)), "tost": []}
        for b in (0.1, 0.2, 0.3):
            p, lower, upper = ttost_ind(x1, x2, -b * sp, b * sp, usevar="pooled")
            c["tost"].append({"bound": b, "p": float(p), "p_lower": float(lower[1]), "p_upper": float(upper[1]),
                              "t_lower": float(lower[0]), "t_upper": float(upper[0])})
        out.append(c)
    return out


def tcdf():
    pts = []
    for df in (1, 2, 5, 30, 1047):
        for t in (-3.5, -1.0, 0.0, 0.4, 2.1, 8.0):
            pts.append({"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))})
    return pts


def elo_run(games, order, start=1500.0, k=32.0):
    r = {}
    h = {}
    for i in order:
        g = games[i]
        rq, hd = r.get(g["requester"], start), h.get(g["holder"], start)
        e = 1 / (1 + 10 ** ((hd - rq) / 400))
        r[g["requester"]] = rq + k * (g["score"] - e)
        h[g["holder"]] = hd - k * (g["score"] - e)
    return r, h


def elo():
    games = [{"requester": "a", "holder": "b", "score": 1}, {"requester": "b", "holder": "a", "score": 0},
             {"requester": "a", "holder": "c", "score": 0}, {"requester": "c", "holder": "b", "score": 0.5},
             {"requester": "b", "holder": "c", "score": 0}, {"requester": "c", "holder": "a", "score": 1}]
    r, h = elo_run(games, range(len(games)))
    rs, hs = {}, {}
    perms = list(itertools.permutations(range(len(games))))
    for p in perms:
        a, b = elo_run(games, p)
        for kk, v in a.items():
            rs[kk] = rs.get(kk, 0) + v / len(perms)
        for kk, v in b.items():
            hs[kk] = hs.get(kk, 0) + v / len(perms)
    return {"games": games, "in_order": {"requester": r, "holder": h}, "all_orders": {"requester": rs, "holder": hs}}


def root(f, x0):
    """The root of an increasing f, bracketed from x0 outwards."""
    w = 1.0
    while not (f(x0 - w) < 0 < f(x0 + w)):
        w *= 2
    return optimize.brentq(f, x0 - w, x0 + w, xtol=1e-14, rtol=1e-14)


def d_interval_wide(d, n1, n2, level):
    """d_interval without a fixed bracket: the roots can lie far from t at few
    degrees of freedom (the noncentral t's tails are heavy)."""
    k = np.sqrt(n1 * n2 / (n1 + n2))
    t = d * k
    df = n1 + n2 - 2
    a = (1 - level) / 2
    lo = root(lambda nc: stats.nct.sf(t, df, nc) - a, t)
    hi = root(lambda nc: a - stats.nct.cdf(t, df, nc), t)
    return lo / k, hi / k


def nct():
    pts = []
    for df in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 30, 50, 100, 200):
        for t in (-6.0, -2.0, -0.5, 0.0, 0.3, 1.5, 4.0, 10.0, 30.0):
            for nc in (-8.0, -3.0, -0.5, 0.0, 1.0, 2.5, 6.0, 12.0, 30.0):
                p = float(stats.nct.cdf(t, df, nc))
                if 0 <= p <= 1:  # scipy gives NaN far in some tails (p < 1e-30)
                    pts.append({"t": t, "df": df, "nc": nc, "cdf": p})
    ivs = []
    for n1, n2 in ((2, 2), (2, 3), (3, 3), (2, 6), (4, 4), (5, 5), (6, 6), (3, 9), (7, 7),
                   (10, 10), (20, 25), (50, 50), (101, 101)):
        for d in (0.197, -0.591, 0.0, 1.5, -3.0):
            c = {"n1": n1, "n2": n2, "d": d}
            c["ci90"] = list(d_interval_wide(d, n1, n2, 0.90))
            c["ci95"] = list(d_interval_wide(d, n1, n2, 0.95))
            ivs.append(c)
    return {"cdf": pts, "intervals": ivs}


def r2():
    rng = np.random.default_rng(8)
    n_agents, games = 6, 180
    h = rng.integers(0, n_agents, games)
    r = (h + rng.integers(1, n_agents, games)) % n_agents
    f = rng.integers(0, 2, games)
    feat1 = rng.normal(0, 1, games)
    feats = [feat1, np.full(games, 2.5), 3 * feat1 + 0.0]
    ha = rng.normal(0, 0.3, n_agents)
    ra = rng.normal(0, 0.1, n_agents)
    y = 0.3 + ha[h] + ra[r] + 0.05 * f + 0.1 * feat1 + rng.normal(0, 0.2, games)
    dummies = lambda a: [(a == k).astype(float) for k in range(n_agents)]
    blocks = {"holder": dummies(h), "requester": dummies(r), "framing": [f.astype(float)], "features": feats,
              "framing+features": [f.astype(float)] + feats}

    def fit(cols):
        X = np.column_stack([np.ones(games)] + cols)
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        res = y - X @ beta
        return float(1 - res @ res / ((y - y.mean()) @ (y - y.mean()))), int(np.linalg.matrix_rank(X)) - 1

    orders = {"forward": ["holder", "requester", "framing", "features"], "reverse": ["framing+features", "requester", "holder"]}
    want = {}
    for name, order in orders.items():
        cols, steps, prev_rank = [], [], 0
        for b in order:
            cols = cols + blocks[b]
            r2v, rank = fit(cols)
            steps.append({"block": b, "r2": r2v, "params": rank - prev_rank})
            prev_rank = rank
        want[name] = steps
    return {"y": y.tolist(), "blocks": {k: [c.tolist() for c in v] for k, v in blocks.items()}, "orders": orders, "want": want}


FIXTURES = {"spearman": spearman, "effect": lambda: {"cases": effect(), "tcdf": tcdf()}, "elo": elo, "nct": nct, "r2": r2}


def main():
    names = sys.argv[1:] or list(FIXTURES)
    for name in names:
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(FIXTURES[name](), f, indent=1)


if __name__ == "__main__":
    main()
