"""Writes enumerate_cases.json: small random score tables and, by brute
force over itertools.product, every package meeting each listed party's
BATNA. The Go enumerator (scenario.Feasible) must return the same lists.

Run from this folder: python3 gen_enumerate.py
"""
import itertools
import json
import random

rng = random.Random(20261201)
cases = []
for c in range(12):
    n_issues = rng.randint(1, 4)
    sizes = [rng.randint(2, 4) for _ in range(n_issues)]
    n_parties = rng.randint(1, 4)
    scores = [[[rng.randint(0, 20) for _ in range(m)] for m in sizes] for _ in range(n_parties)]
    batna = []
    for p in range(n_parties):
        best = sum(max(row) for row in scores[p])
        batna.append(rng.randint(0, best))
    feasible = []
    for pkg in itertools.product(*[range(m) for m in sizes]):
        if all(sum(scores[p][i][k] for i, k in enumerate(pkg)) >= batna[p] for p in range(n_parties)):
            feasible.append(list(pkg))
    cases.append({"sizes": sizes, "scores": scores, "batna": batna, "feasible": feasible})

with open("enumerate_cases.json", "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(c) for c in cases) + "\n]\n")
print(len(cases), "cases;", sum(len(c["feasible"]) for c in cases), "feasible packages in all")
