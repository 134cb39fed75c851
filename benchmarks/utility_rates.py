"""Empirical rate in n of the privacy error E||release - summary||^2 against the theorems' exponents.

Not a pass/fail test: prints a table (and writes benchmarks/results/utility_rates.json) of the
fitted log-log slope of the privacy error in n for

* ICLP-QR mean (LR Thm 7 [14], Cor. 1 [15]): privacy error
  ~ n^-2 psi^(-(beta+2)/(eta beta)); at the PSS penalty psi = (n eps^2)^(-eta beta/(beta+2))
  this is n^-1, and with psi = 1/n it is n^(-2 + (beta+2)/(eta beta)) (o(1/n) for
  eta > 1 + 2/beta: "free privacy");
* ICLP-AR mean: Thm 7's AR term (J*)^(eta beta + 2)/(n eps)^2 with the PSS-style psi of
  ``pss_ar_psi`` (the papers' versions disagree on AR rates, so the slope is only reported);
* MRS penalised mean (Thm 4.2): sigma^2 tr(C) ~ N^(-2 + 1/eta) with phi ~ 1/N.

Each privacy error is the Monte Carlo mean over ``DRAWS`` releases of the squared L2 norm
of (release - summary) on the 100-point midpoint grid, for a dataset of n zero curves (the
noise does not depend on the data). The slope is fitted over the n grid below.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/utility_rates.py``.
"""

from __future__ import annotations

import json
import os
import time

import jax
import numpy as np

import dpaudit

NS = (100, 300, 1000, 3000, 10000)
DRAWS = 2000
BETA = 4.0  # Matérn nu = 3/2 on [0, 1]: lambda_j ~ j^-4


def privacy_error(name: str, n: int, **params) -> float:
    """Monte Carlo ``E ||release - summary||^2_{L2}`` of catalogue entry ``name`` at ``n``."""
    mech = dpaudit.build(name, n=n, **params)
    data = np.zeros((n, 100))
    summary = np.asarray(mech.summary(data))
    x = np.asarray(mech.sample(data, jax.random.key(n), DRAWS))
    if x.shape[-1] != 100:
        raise ValueError(f"{name}: expected 100 grid values, got {x.shape}.")
    return float(np.mean(np.mean((x - summary) ** 2, axis=-1)))


def fit(ns, errors) -> float:
    """Slope of log error against log n."""
    return float(np.polyfit(np.log(ns), np.log(errors), 1)[0])


def main() -> None:
    cases = [
        ("ICLP-QR, PSS psi, eta = 1.5", "iclp-qr-mean", {"eta": 1.5}, -1.0),
        ("ICLP-QR, psi = 1/n, eta = 2", "iclp-qr-mean", {"eta": 2.0, "psi": None}, -2 + 6 / 8),
        ("ICLP-AR, PSS-style psi, eta = 1.5", "iclp-ar-mean", {"eta": 1.5}, None),
        ("MRS, phi = 0.5/N, eta = 1", "mrs-penalized-mean", {"eta": 1.0, "phi": None}, -1.0),
        ("MRS, phi = 0.5/N, eta = 2", "mrs-penalized-mean", {"eta": 2.0, "phi": None}, -1.5),
    ]
    rows = []
    start = time.process_time()
    for label, name, params, predicted in cases:
        errors = []
        for n in NS:
            p = dict(params)
            if "psi" in p:
                p["psi"] = 1.0 / n
            if "phi" in p:
                p["phi"] = 0.5 / n
            errors.append(privacy_error(name, n, **p))
        slope = fit(NS, errors)
        rows.append(
            {"case": label, "n": list(NS), "errors": errors, "slope": slope, "theorem": predicted}
        )
        shown = "  (reported only)" if predicted is None else f"  theorem {predicted:+.3f}"
        print(f"{label:38s} slope {slope:+.3f}{shown}", flush=True)
    print(f"CPU seconds: {time.process_time() - start:.1f}; load: {os.getloadavg()}")
    out = os.path.join(os.path.dirname(__file__), "results", "utility_rates.json")
    with open(out, "w") as f:
        json.dump({"draws": DRAWS, "beta": BETA, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
