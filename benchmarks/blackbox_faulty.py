"""Black-box detection of the faulty catalogue: smallest sample budget that certifies a violation.

Every faulty mechanism of the catalogue is run as a *plain sampler*
(:func:`dpaudit.blackbox.as_sampler`: the audit sees releases only, never the
model) on its visible neighbouring pair (``mechanisms.faulty.example_pair``)
and audited with :func:`dpaudit.blackbox_audit` against its own claim, with

* ``model`` — the model-guided statistic, the privacy loss of a reference
  model. The reference is the faulty model itself ("the implementation as
  declared": the privacy loss of the code's own density, which a user who
  wrote the model can always compute) and, where the catalogue has the
  *correct intended* mechanism with the same release, that one too
  (``INTENDED`` below);
* ``logistic`` — DP-Sniper-style logistic regression on the raw release;
* ``mlp`` — a small ReLU network, run where logistic regression does not
  flag the mechanism at the first budget.

Budget escalation: certification releases per dataset ``1e4 -> 1e5 -> 1e6 -> 1e7``
(selection releases ``max(1e4, budget / 10)`` per dataset on top, drawn
separately), stopping at the first ``"violation"`` at 95% confidence. For each
(mechanism, method) the script records the smallest flagging budget, the
certified ``epsilon`` lower bound there against the true epsilon, and the
seconds (that audit, and the whole escalation). At most ``1e7`` certification
releases per dataset. Then each mechanism's cheapest flagging route is re-run at its flagging
budget with seeds ``0..K-1`` (``--rate-seeds``, default 10): the fraction flagged says whether
the flag at seed 0 is reproducible or luck at a budget that is just enough.

Run ``nice -n 10 python benchmarks/blackbox_faulty.py`` (long: tens of
minutes on 2 shared cores). Writes ``benchmarks/results/blackbox_faulty.json``
and prints the markdown table of ``BENCHMARKS.md``. ``--ladder 10000 100000``
and ``--names faulty/...`` restrict the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

import dpaudit
import mechanisms  # noqa: F401  (fills the catalogue)
from dpaudit.blackbox import as_sampler, blackbox_audit
from mechanisms.faulty import example_pair

LADDER = (10_000, 100_000, 1_000_000, 10_000_000)
CONFIDENCE = 0.95
RESULTS = Path(__file__).resolve().parent / "results" / "blackbox_faulty.json"

#: Correct mechanisms of the catalogue with the same release as a faulty one:
#: ``faulty name -> (catalogue name, builder arguments, why it is the intended one)``.
INTENDED = {
    "faulty/gaussian-classical-large-epsilon": (
        "gaussian-mean-analytic",
        {"epsilon": 10.0, "delta": 0.01, "n": 10, "dim": 1},
        "the same clipped mean with Balle & Wang's analytic sigma",
    ),
    "faulty/gaussian-pure-claim": (
        "laplace-mean",
        {"epsilon": 1.0, "n": 10, "dim": 1},
        "the pure-DP mean the claim describes (Laplace noise): a mis-specified reference",
    ),
    "faulty/svt-lyu-alg4": (
        "svt",
        {"epsilon": 1.0, "n": 4, "thresholds": (2.0,) * 8, "cutoff": 2},
        "Lyu et al. Alg. 1 with the same cutoff (query noise scaled by c)",
    ),
}


def _audit(sampler, pair, claim, method, reference, samples, seed):
    d, d_prime = pair
    result = blackbox_audit(
        sampler,
        d,
        d_prime,
        claim,
        statistic=method,
        reference=reference,
        samples=samples,
        confidence=CONFIDENCE,
        seed=seed,
        progress=False,
    )
    return {
        "samples": samples,
        "samples_select": result.samples_select,
        "verdict": result.verdict,
        "epsilon_lower": _json_float(result.epsilon_lower),
        "delta_lower": _json_float(result.delta_lower),
        "counts": result.event.counts.to_dict(),
        "direction": result.event.direction,
        "statistic": result.event.statistic,
        "seconds": round(result.seconds, 2),
    }


def _json_float(v):
    v = float(v)
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def escalate(name, method, reference, reference_name, ladder, seed):
    """Audit ``name`` at growing budgets until it is flagged (or the ladder ends)."""
    mech = dpaudit.build(name)
    sampler = as_sampler(mech)
    pair = example_pair(name)
    attempts = []
    t0 = time.perf_counter()
    for samples in ladder:
        row = _audit(sampler, pair, mech.claim, method, reference, samples, seed)
        attempts.append(row)
        print(
            f"  {name:40s} {method:8s} {reference_name or '':28s} n={samples:>9,d} "
            f"{row['verdict']:12s} eps_lo={row['epsilon_lower']!s:8.8} {row['seconds']:8.1f}s",
            file=sys.stderr,
            flush=True,
        )
        if row["verdict"] == "violation":
            break
    flagged = attempts[-1]["verdict"] == "violation"
    return {
        "mechanism": name,
        "claim": {"epsilon": mech.claim.epsilon, "delta": mech.claim.delta},
        "true_epsilon": _json_float(mech.known_flaw.true_epsilon),
        "method": method,
        "reference": reference_name,
        "flagged": flagged,
        "budget": attempts[-1]["samples"] if flagged else None,
        "samples_select": attempts[-1]["samples_select"] if flagged else None,
        "epsilon_lower": attempts[-1]["epsilon_lower"],
        "seconds_at_budget": attempts[-1]["seconds"],
        "seconds_total": round(time.perf_counter() - t0, 2),
        "attempts": attempts,
    }


def run(names, ladder, seed):
    rows = []
    for name in names:
        mech = dpaudit.build(name)
        plans = [("model", mech, "itself"), ("logistic", None, None)]
        if name in INTENDED:
            entry, kwargs, _ = INTENDED[name]
            plans.insert(1, ("model", dpaudit.build(entry, **kwargs), entry))
        logistic_first = None
        for method, reference, reference_name in plans:
            row = escalate(name, method, reference, reference_name, ladder, seed)
            rows.append(row)
            if method == "logistic":
                logistic_first = row["attempts"][0]["verdict"]
        if logistic_first != "violation":
            rows.append(escalate(name, "mlp", None, None, ladder, seed))
    return rows


def detection_rates(rows, seeds):
    """Re-run each mechanism's cheapest flagging route at its flagging budget with more seeds.

    Cheapest: the smallest flagging budget; among equals logistic regression (model-free), then
    the declared model, then the MLP, then an intended reference.

    One flag at seed 0 can be luck when the budget is just enough (the certified bound's median
    sits at the claim): the fraction of ``seeds`` that flag says how reproducible it is.
    """
    out = []
    for name in dict.fromkeys(r["mechanism"] for r in rows):
        flagged = [r for r in rows if r["mechanism"] == name and r["flagged"]]
        if not flagged:
            continue
        # smallest budget; among equals the model-free route first, then the declared model
        preference = {("logistic", None): 0, ("model", "itself"): 1, ("mlp", None): 2}
        best = min(
            flagged, key=lambda r: (r["budget"], preference.get((r["method"], r["reference"]), 3))
        )
        mech = dpaudit.build(name)
        reference = None
        if best["method"] == "model":
            reference = (
                mech
                if best["reference"] == "itself"
                else dpaudit.build(best["reference"], **INTENDED[name][1])
            )
        t0 = time.perf_counter()
        attempts = [
            _audit(
                as_sampler(mech),
                example_pair(name),
                mech.claim,
                best["method"],
                reference,
                best["budget"],
                seed,
            )
            for seed in seeds
        ]
        bounds = [a["epsilon_lower"] for a in attempts]
        finite = [b for b in bounds if not isinstance(b, str)]
        row = {
            "mechanism": name,
            "method": best["method"],
            "reference": best["reference"],
            "budget": best["budget"],
            "seeds": list(seeds),
            "flagged": sum(a["verdict"] == "violation" for a in attempts),
            "epsilon_lower_min": min(finite) if finite else None,
            "epsilon_lower_median": float(np.median(finite)) if finite else None,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        print(
            f"  rate {name:40s} {row['method']:8s} n={row['budget']:>9,d} "
            f"{row['flagged']}/{len(seeds)}",
            file=sys.stderr,
            flush=True,
        )
        out.append(row)
    return out


def _fmt_eps(v):
    return v if isinstance(v, str) else f"{v:.3f}"


def markdown(rows, meta) -> str:
    lines = [
        "| mechanism | claim (eps, delta) | true eps | method (reference) | smallest budget | "
        "certified eps_lower | / true | delta_lower (delta > 0) | s at budget | s escalation |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        true = r["true_epsilon"]
        ratio = (
            "—"
            if isinstance(true, str) or isinstance(r["epsilon_lower"], str)
            else f"{r['epsilon_lower'] / true:.2f}"
        )
        method = r["method"] + (f" ({r['reference']})" if r["reference"] else "")
        budget = f"{r['budget']:.0e}".replace("+0", "") if r["flagged"] else "not flagged"
        delta_lower = r["attempts"][-1]["delta_lower"]
        delta = "—" if r["claim"]["delta"] == 0 else _fmt_eps(delta_lower)
        lines.append(
            f"| {r['mechanism'].removeprefix('faulty/')} | ({r['claim']['epsilon']:g}, "
            f"{r['claim']['delta']:g}) | {_fmt_eps(true)} | {method} | {budget} | "
            f"{_fmt_eps(r['epsilon_lower'])} | {ratio} | {delta} | {r['seconds_at_budget']:.1f} | "
            f"{r['seconds_total']:.1f} |"
        )
    if meta.get("rates"):
        lines += [
            "",
            "| mechanism | cheapest flagging route | budget | flagged / seeds | min / median "
            "eps_lower | s |",
            "|---|---|---|---|---|---|",
        ]
        for r in meta["rates"]:
            method = r["method"] + (f" ({r['reference']})" if r["reference"] else "")
            lines.append(
                f"| {r['mechanism'].removeprefix('faulty/')} | {method} | "
                f"{r['budget']:.0e}".replace("+0", "")
                + f" | {r['flagged']} / {len(r['seeds'])} | {_fmt_eps(r['epsilon_lower_min'])} / "
                f"{_fmt_eps(r['epsilon_lower_median'])} | {r['seconds']:.1f} |"
            )
    lines.append("")
    lines.append(
        f"Seed {meta['seed']}, confidence {CONFIDENCE}; ladder {meta['ladder']}; total "
        f"{meta['seconds_total']:.0f} s on {meta['machine']} (load average "
        f"{meta['load_start']} at start, {meta['load_end']} at end)."
    )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ladder", type=int, nargs="+", default=list(LADDER))
    parser.add_argument("--names", nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--rate-seeds",
        type=int,
        default=10,
        help="seeds 0..K-1 for the detection rate of each mechanism's cheapest route (0: skip)",
    )
    parser.add_argument(
        "--render", action="store_true", help="print the markdown of the --out JSON and exit"
    )
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(args.out.read_text())
        print(markdown(saved["rows"], saved["meta"]))
        return
    if max(args.ladder) > 10_000_000:
        parser.error("at most 1e7 certification releases per dataset.")
    names = args.names or dpaudit.catalogue(faulty=True)
    load_start = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    t0 = time.perf_counter()
    rows = run(names, tuple(args.ladder), args.seed)
    rates = detection_rates(rows, range(args.rate_seeds)) if args.rate_seeds else []
    meta = {
        "seed": args.seed,
        "ladder": list(args.ladder),
        "confidence": CONFIDENCE,
        "seconds_total": round(time.perf_counter() - t0, 1),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"JAX {jax.__version__} {jax.default_backend()}",
        "load_start": load_start,
        "load_end": ", ".join(f"{v:.1f}" for v in os.getloadavg()),
        "numpy": np.__version__,
        "intended_references": {k: {"entry": v[0], "why": v[2]} for k, v in INTENDED.items()},
        "rates": rates,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    os.chmod(args.out, 0o644)
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
