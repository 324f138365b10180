"""Writes sequences.json: random BRS count sequences and EMA signal
sequences with the trust after every game, computed here independently of
the Go code (E = (r+1)/(r+s+2), r <- gamma*r + r', s <- gamma*s + s';
t <- lam*t + (1-lam)*x from the prior).

Run from this folder: python3 gen_sequences.py
"""
import json
import random

rng = random.Random(7)
brs, ema = [], []
for c in range(8):
    gamma = rng.choice([0.9, 0.8, 1.0, 0.5])
    games = [[rng.randint(0, 4), rng.randint(0, 4)] for _ in range(rng.randint(1, 12))]
    r = s = 0.0
    trust = []
    for rr, ss in games:
        r = gamma * r + rr
        s = gamma * s + ss
        trust.append((r + 1) / (r + s + 2))
    brs.append({"gamma": gamma, "counts": games, "trust": trust})
for c in range(8):
    lam = rng.choice([0.5, 0.7, 0.9])
    prior = rng.choice([0.5, 0.1, 0.9])
    xs = [round(rng.random(), 3) for _ in range(rng.randint(1, 12))]
    t = prior
    trust = []
    for x in xs:
        t = lam * t + (1 - lam) * x
        trust.append(t)
    ema.append({"lambda": lam, "prior": prior, "signals": xs, "trust": trust})
with open("sequences.json", "w") as f:
    json.dump({"brs": brs, "ema": ema}, f, indent=1)
    f.write("\n")
