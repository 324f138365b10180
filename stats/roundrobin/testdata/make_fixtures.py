"""Fixtures for package roundrobin, computed independently of the Go code.

Run once (numpy, pandas, statsmodels; the values are kept in this folder):

    python stats/roundrobin/testdata/make_fixtures.py [NAME ...]

(with NAMEs, only those fixtures are written: wks, mixed, designs).

wks.json:   a complete, balanced round robin (6 agents, 3 games per ordered
            pairing and framing) and the Warner-Kenny-Stoto (1979)
            social-relations-model estimates from its closed-form formulas
            (actor/partner effects from row and column means, relationship
            variance and reciprocity from between- and within-dyad mean
            squares), with game noise from the within-cell variance after
            the within-cell framing contrast is removed.
mixed.json: a round robin (8 agents) and statsmodels' MixedLM REML fit of
            y ~ framing with crossed random intercepts for holder and
            requester (one group, variance components); the best REML
            log-likelihood of four optimisers.
designs.json: the designs seed 001's report meets at the edges, each with
            statsmodels' REML fit as for mixed.json: "one_framing" (8
            agents, framing 0 only, fitted as y ~ 1) and "rounds_1" (seed
            001's alternating schedule at one round: every ordered pairing
            played once, under one framing; y ~ framing).
"""
import json
import os
import sys

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

HERE = os.path.dirname(os.path.abspath(__file__))


def simulate(rng, n, reps, sa, sb, sg, rho, d, se):
    a = rng.normal(0, sa, n)
    b = rng.normal(0, sb, n)
    g = {}
    for i in range(n):
        for j in range(i + 1, n):
            cov = [[sg**2, rho * sg**2], [rho * sg**2, sg**2]]
            gij, gji = rng.multivariate_normal([0, 0], cov)
            g[(i, j)], g[(j, i)] = gij, gji
    rows = []
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            for f in (0, 1):
                for _ in range(reps):
                    y = 0.3 + a[i] + b[j] + g[(i, j)] + (d / 2 if f == 0 else -d / 2) + rng.normal(0, se)
                    rows.append({"holder": i, "requester": j, "framing": f, "y": float(y)})
    return rows


def wks(rows, n):
    df = pd.DataFrame(rows)
    # within-cell framing contrast, weights n0*n1/(n0+n1)
    num = den = 0.0
    for (_, _), c in df.groupby(["holder", "requester"]):
        y0, y1 = c[c.framing == 0].y, c[c.framing == 1].y
        w = len(y0) * len(y1) / (len(y0) + len(y1))
        num += w * (y0.mean() - y1.mean())
        den += w
    d = num / den
    df["adj"] = np.where(df.framing == 0, df.y - d / 2, df.y + d / 2)
    cm = df.groupby(["holder", "requester"]).adj.mean()
    ssw = ((df.adj - df.groupby(["holder", "requester"]).adj.transform("mean")) ** 2).sum()
    dfw = (df.groupby(["holder", "requester"]).size() - 1).sum() - 1
    se2 = ssw / dfw
    ncell = df.groupby(["holder", "requester"]).size().iloc[0]
    x = np.full((n, n), np.nan)
    for (i, j), v in cm.items():
        x[i, j] = v
    M = np.nanmean(x)
    Mi = np.nanmean(x, axis=1)
    Mj = np.nanmean(x, axis=0)
    k1 = (n - 1) ** 2 / (n * (n - 2))
    k2 = (n - 1) / (n * (n - 2))
    k3 = (n - 1) / (n - 2)
    a = k1 * Mi + k2 * Mj - k3 * M
    b = k1 * Mj + k2 * Mi - k3 * M
    gsum = gdiff = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            gij = x[i, j] - a[i] - b[j] - M
            gji = x[j, i] - a[j] - b[i] - M
            gsum += (gij + gji) ** 2 / 2
            gdiff += (gij - gji) ** 2 / 2
    msb = gsum / ((n - 1) * (n - 2) / 2 - 1)
    msw = gdiff / ((n - 1) * (n - 2) / 2)
    sg2 = (msb + msw) / 2
    sgg = (msb - msw) / 2
    sa2 = (a**2).sum() / (n - 1) - msb / (2 * (n - 2)) - msw / (2 * n)
    sb2 = (b**2).sum() / (n - 1) - msb / (2 * (n - 2)) - msw / (2 * n)
    return {
        "holder": sa2, "requester": sb2, "matchup": sg2 - se2 / ncell, "reciprocity": sgg,
        "residual": se2, "framing_effect": d, "framing": (d * d - se2 / den) / 4, "mean": M,
    }


def mixed(rows, formula="y ~ framing"):
    df = pd.DataFrame(rows)
    df["one"] = 1
    md = smf.mixedlm(formula, df, groups="one",
                     vc_formula={"holder": "0 + C(holder)", "requester": "0 + C(requester)"}, re_formula="0")
    # The optimisers disagree in the 4th digit: keep the best REML fit.
    fits = [md.fit(reml=True, method=[m], maxiter=5000) for m in ("nm", "powell", "bfgs", "lbfgs")]
    fit = max(fits, key=lambda f: f.llf)
    vc = dict(zip(md.exog_vc.names, fit.vcomp))
    out = {"holder": float(vc["holder"]), "requester": float(vc["requester"]), "residual": float(fit.scale),
           "intercept": float(fit.fe_params["Intercept"]), "llf": float(fit.llf), "converged": bool(fit.converged)}
    if "framing" in fit.fe_params:
        out["framing"] = float(fit.fe_params["framing"])
        out["framing_var"] = float(fit.cov_params().loc["framing", "framing"])
    return out


def alternate_once(rng, n, sa, sb, sg, d, se):
    """Seed 001's schedule at rounds: 1: one game per unordered pair and
    framing, agent i holding against j when 1 + f + i + j is even."""
    a, b = rng.normal(0, sa, n), rng.normal(0, sb, n)
    rows = []
    for f in (0, 1):
        for i in range(n):
            for j in range(i + 1, n):
                h, r = (i, j) if (1 + f + i + j) % 2 == 0 else (j, i)
                y = 0.3 + a[h] + b[r] + rng.normal(0, sg) + (d / 2 if f == 0 else -d / 2) + rng.normal(0, se)
                rows.append({"holder": h, "requester": r, "framing": f, "y": float(y)})
    return rows


def write(name, obj):
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(obj, f, indent=1)


def make_wks():
    rng = np.random.default_rng(20260501)
    rows = simulate(rng, 6, 3, 0.30, 0.12, 0.10, 0.4, 0.05, 0.25)
    write("wks", {"agents": 6, "games": rows, "want": wks(rows, 6)})


def make_mixed():
    rng = np.random.default_rng(7)
    rows = simulate(rng, 8, 2, 0.30, 0.15, 0.05, 0.0, 0.04, 0.20)
    write("mixed", {"agents": 8, "games": rows, "want": mixed(rows)})


def make_designs():
    rng = np.random.default_rng(11)
    one = [r for r in simulate(rng, 8, 2, 0.30, 0.15, 0.05, 0.0, 0.04, 0.20) if r["framing"] == 0]
    rng = np.random.default_rng(12)
    once = alternate_once(rng, 10, 0.30, 0.15, 0.10, 0.10, 0.20)
    write("designs", {"one_framing": {"agents": 8, "games": one, "want": mixed(one, "y ~ 1")},
                      "rounds_1": {"agents": 10, "games": once, "want": mixed(once)}})


FIXTURES = {"wks": make_wks, "mixed": make_mixed, "designs": make_designs}


def main():
    for name in sys.argv[1:] or list(FIXTURES):
        FIXTURES[name]()


if __name__ == "__main__":
    main()
