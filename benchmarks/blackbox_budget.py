r"""Black-box budgets: DP-Sniper's rows at its own confidence and a tenth of its samples,
the saving of sequential certification, and the selection share of the wall time.

Three measurements (``--part dpsniper | sequential | share``, default all; ``dpsniper-s6``
the session-6 split):

* **dpsniper** — the rows of ``blackbox_tightness.py`` (StatDP / DP-Sniper
  mechanisms, claimed epsilon 0.1) audited at DP-Sniper's confidence (90 %) with
  the model-guided statistic (the rule's primary statistic; one audit per row, no
  best-of-many), at a tenth of DP-Sniper's samples. DP-Sniper's budget per input
  (``eth-sri/dp-sniper``, ``dpsniper/search/ddconfig.py`` defaults, used for its
  published runs): ``n_train + n + n_check = 3 x 1.07e7`` to train and threshold the
  attack on the pair it keeps, plus ``n_final = 2e8`` for the final estimate: at least
  ``2.321e8`` releases per input, not counting the search over its other input pairs
  (so its true budget is larger and the tenth below is conservative). dpaudit gets
  ``2.321e7`` per dataset in all. Session 7 (``--part dpsniper``): the claims are pure,
  so the bound is the conditional ratio bound on Poissonised certification counts;
  selection gets a tenth of the budget (``select = min(2e6, total / (10 pairs))`` per
  pair) and certification a Poisson count of mean ``total - pairs x select - 6
  sqrt(total)``, so that the releases actually drawn stay within the tenth (the
  realised counts are reported). Both rules were fixed before the run. Session 6's
  rule (``--part dpsniper-s6``: ``select = min(2e6, total / (4 pairs))``, the rest for
  certification) is kept for comparison.
* **sequential** — the faulty rows (true epsilon above the claim) audited once with
  ``stopping="fixed"`` and once with ``stopping="sequential"`` at the same budget: the
  fraction of the certification budget the sequential audit used and both bounds.
* **share** — the selection share of the wall time at 1e7 certification releases
  (``select_samples`` default, 1e6), measured warm: each audit is run twice in the
  process and the second run's ``timings`` are reported (the first compiles), with the
  process CPU time of the second run and of each phase (``timings``). ``--baseline DIR`` (a checkout of older code) runs
  every case in a fresh process with the baseline's dpaudit, then with this tree's, one
  after the other: before and after side by side under the same load.

Run ``python benchmarks/blackbox_budget.py`` (minutes per part on 2 cores) or
``--part share``; ``--quick`` shrinks every budget by 100 (a smoke run).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blackbox_tightness as bt
import jax
import jax.numpy as jnp

import dpaudit
from dpaudit.blackbox import blackbox_audit, certified_epsilon

#: DP-Sniper's confidence (``DDConfig.confidence``).
DPSNIPER_CONFIDENCE = 0.9
#: DP-Sniper's releases per input for the pair it keeps (``n_train + n + n_check + n_final``).
DPSNIPER_SAMPLES = 3 * 10_700_000 + 200_000_000
#: dpaudit's budget per dataset: a tenth of DP-Sniper's.
BUDGET = DPSNIPER_SAMPLES // 10
_MAX_SELECT_PER_PAIR = 2_000_000
#: The faulty rows of the sequential comparison: the clear violations (and SVT Alg. 6, whose
#: violation is of the size of the claim), not the rows whose bound is at the budget's edge.
SEQUENTIAL_ROWS = ("noisyhist2", "rnm4", "svt5", "svt6")


def _count(n: int) -> str:
    """``23210000 -> '2.321e7'``."""
    mantissa, exponent = f"{n:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _split(total: int, pairs: int) -> tuple[int, int]:
    """``(certification, selection per pair)`` of a total budget per dataset (session 6)."""
    select = min(_MAX_SELECT_PER_PAIR, total // (4 * pairs))
    return total - pairs * select, select


#: Session 7: selection's share of the DP-Sniper budget (a tenth, split over the pairs).
_SELECT_SHARE = 10
#: Standard deviations of the Poisson certification count kept below the budget, so the
#: releases drawn stay within a tenth of DP-Sniper's (P(Poisson(m) > m + 6 sqrt(m)) ~ 1e-9).
_POISSON_MARGIN_SDS = 6


def _split_s7(total: int, pairs: int) -> tuple[int, int]:
    """``(certification Poisson mean, selection per pair)``: a tenth to selection."""
    select = min(_MAX_SELECT_PER_PAIR, total // (_SELECT_SHARE * pairs))
    cert = total - pairs * select
    return cert - int(_POISSON_MARGIN_SDS * math.sqrt(cert)), select


def dpsniper_table(scale: int = 1, split=_split_s7) -> list[str]:
    """Rows at 90 % with a tenth of DP-Sniper's samples (model-guided statistic)."""
    lines = [
        "| mechanism | true ε | DP-Sniper lcb (90 %) | DP-Sniper samples / input | dpaudit "
        "releases / dataset counted (cert. P / Q + select) | dpaudit bound (90 %) | bound | "
        "pair on the same counts | wall / CPU s | load | goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in bt.rows():
        cert, select = split(BUDGET // scale, len(r.pairs))
        cpu, load = time.process_time(), _load()
        res = bt.audit_row(
            r, "model", samples=cert, select_samples=select, confidence=DPSNIPER_CONFIDENCE
        )
        cpu = time.process_time() - cpu
        lcb = r.published["dpsniper"][1]
        drawn = res.event.releases
        total = max(drawn) + len(r.pairs) * select
        if r.control:
            goal = "control: ≤ 0.1 ✓" if res.epsilon_lower <= r.claim.epsilon else "✗ above 0.1"
        else:
            goal = "≥ lcb ✓" if res.epsilon_lower >= lcb else f"✗ {res.epsilon_lower - lcb:+.4f}"
        within = "" if total <= BUDGET // scale else " (over the tenth!)"
        # for comparison only (not the result): the session-6 pair on the very same counts
        k = res.event.counts
        pair = float(certified_epsilon(k.P, drawn.P, k.Q, drawn.Q, confidence=DPSNIPER_CONFIDENCE))
        lines.append(
            f"| {r.title} | {r.true_epsilon:.4g} | {lcb:.4g} | "
            f"{_count(DPSNIPER_SAMPLES)} | {_count(total)}{within} ({drawn.P} / {drawn.Q} + "
            f"{len(r.pairs)}×{_count(select)}) | **{res.epsilon_lower:.4g}** | "
            f"{res.bound_method} | {pair:.4g} | {res.seconds:.0f} / {cpu:.0f} | {load} | {goal} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


#: The rows within counting noise of DP-Sniper's bound at this budget, rerun over seeds.
BORDERLINE_ROWS = ("rnm3", "svt4")
BORDERLINE_SEEDS = (0, 1, 2, 3)


def borderline_table(scale: int = 1, split=_split_s7, keys=BORDERLINE_ROWS) -> list[str]:
    """The borderline rows at several seeds (the table's rule; seed 0 is the table's row).

    Not a best-of: every seed is reported, to show how often one audit at this budget
    reaches DP-Sniper's bound. ``point`` is the plug-in ``log(k_P / k_Q)`` of the counts.
    """
    lines = [
        "| mechanism | seed | bound (90 %) | k_P / k_Q | point log(k_P/k_Q) | pair on the same "
        "counts | DP-Sniper lcb | wall s | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in keys:
        r = bt.row(key)
        cert, select = split(BUDGET // scale, len(r.pairs))
        for seed in BORDERLINE_SEEDS:
            load = _load()
            res = bt.audit_row(
                r, "model", samples=cert, select_samples=select, seed=seed,
                confidence=DPSNIPER_CONFIDENCE,
            )  # fmt: skip
            k, n = res.event.counts, res.event.releases
            point = math.log(k.P / n.P) - math.log(k.Q / n.Q)
            pair = float(certified_epsilon(k.P, n.P, k.Q, n.Q, confidence=DPSNIPER_CONFIDENCE))
            lines.append(
                f"| {r.title} | {seed} | **{res.epsilon_lower:.4g}** | {k.P} / {k.Q} | "
                f"{point:.4f} | {pair:.4g} | {r.published['dpsniper'][1]:.4g} | "
                f"{res.seconds:.0f} | {load} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def sequential_table(scale: int = 1) -> list[str]:
    """Faulty rows: fixed vs sequential certification at the same budget."""
    lines = [
        "| mechanism | budget (cert. per dataset) | fixed bound | sequential bound | look | "
        "budget used | wall s fixed / sequential | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in bt.rows():
        if r.key not in SEQUENTIAL_ROWS:
            continue
        cert, select = _split(BUDGET // scale, len(r.pairs))
        load = _load()
        runs = {
            stop: bt_audit(r, cert, select, stop) for stop in ("fixed", "sequential")
        }  # fmt: skip
        seq = runs["sequential"].stopping
        lines.append(
            f"| {r.title} | {_count(cert)} | {runs['fixed'].epsilon_lower:.4g} | "
            f"{runs['sequential'].epsilon_lower:.4g} | {seq.look} of {seq.looks} | "
            f"{100 * seq.budget_fraction:.1f} % | {runs['fixed'].seconds:.0f} / "
            f"{runs['sequential'].seconds:.0f} | {load} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def bt_audit(r, cert: int, select: int, stopping: str):
    """One model-guided audit of a benchmark row at 95 % with the given stopping rule."""
    return blackbox_audit(
        r.sampler,
        claim=r.claim,
        pairs=[(d, dp) for _, d, dp in r.pairs],
        statistic="model",
        reference=r.reference(),
        samples=cert,
        select_samples=select,
        seed=0,
        chunk_size=r.chunk_size,
        name=r.key,
        progress=False,
        stopping=stopping,
    )


def laplace_count(data, n, key):
    """A scalar Laplace count (sensitivity 1, scale 1): epsilon 1."""
    return jnp.sum(data) + jax.random.laplace(key, (n,))


def _scalar_laplace(samples: int):
    return blackbox_audit(
        laplace_count,
        jnp.zeros(5),
        jnp.ones(5).at[1:].set(0.0),
        dpaudit.Claim(0.5),
        samples=samples,
        seed=0,
        progress=False,
    )


def _rnm_index(samples: int):
    return bt.audit_row(bt.row("rnm1"), "model", samples=samples, select_samples=samples // 10)


#: The audits of the share table: a one-pair classifier audit and an 8-pair model-guided one.
SHARE_CASES = {
    "scalar Laplace count (claim 0.5)": _scalar_laplace,
    "ReportNoisyMax index, 8 pairs (model)": _rnm_index,
}


def share_case(name: str, samples: int) -> dict:
    """One share case in this process, warm: run twice, the second run's figures.

    Returns:
        ``selection``, ``certification``, ``wall`` (the audit's ``seconds``: strength and
        result included), ``cpu`` (process CPU of the second run), ``load``, and the audit's
        statistic, budgets and bound.
    """
    run = SHARE_CASES[name]
    run(samples)  # compiles
    load, cpu = _load(), time.process_time()
    res = run(samples)
    return {
        "selection": res.timings.selection,
        "certification": res.timings.certification,
        "selection_cpu": res.timings.selection_cpu,
        "certification_cpu": res.timings.certification_cpu,
        "wall": res.seconds,
        "cpu": time.process_time() - cpu,
        "load": load,
        "statistic": res.statistic,
        "samples": res.samples,
        "select": res.samples_select,
        "epsilon_lower": res.epsilon_lower,
    }


def _share_in(root: str, name: str, samples: int) -> dict:
    """:func:`share_case` in a fresh process importing dpaudit from ``root`` (a checkout)."""
    env = dict(os.environ, PYTHONPATH=str(Path(root).resolve()))
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import blackbox_budget as b; "
        "print(json.dumps(b.share_case(sys.argv[2], int(sys.argv[3]))))"
    )
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run(
        [sys.executable, "-c", code, here, name, str(samples)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def share_table(scale: int = 1, baseline: str | None = None) -> list[str]:
    """Selection share of the wall time at 1e7 certification releases, warm.

    With ``baseline`` (a checkout of older code, e.g. ``git archive main dpaudit mechanisms``
    unpacked in a directory), each case runs in a fresh process with the baseline's dpaudit
    and then with this tree's, one after the other, so both see the same machine load.
    """
    lines = [
        "| audit | code | statistic | cert. / select per dataset | selection wall / CPU s | "
        "certification wall / CPU s | selection share, wall (CPU) | share of audit wall | "
        "audit wall / CPU s | eps lower | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    samples = 10_000_000 // scale
    here = str(Path(__file__).resolve().parents[1])
    for name in SHARE_CASES:
        runs = [("before", baseline), ("after", here)] if baseline else [("this tree", None)]
        for label, root in runs:
            r = share_case(name, samples) if root is None else _share_in(root, name, samples)
            sel, cert = r["selection"], r["certification"]
            sel_cpu, cert_cpu = r["selection_cpu"], r["certification_cpu"]
            lines.append(
                f"| {name} | {label} | {r['statistic']} | {_count(r['samples'])} / "
                f"{_count(r['select'])} | {sel:.2f} / {sel_cpu:.2f} | {cert:.2f} / "
                f"{cert_cpu:.2f} | {100 * sel / (sel + cert):.0f} % "
                f"({100 * sel_cpu / (sel_cpu + cert_cpu):.0f} %) | {100 * sel / r['wall']:.0f} % | "
                f"{r['wall']:.2f} / {r['cpu']:.2f} | {r['epsilon_lower']:.4g} | {r['load']} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = ("dpsniper", "dpsniper-s6", "borderline", "borderline-s6", "sequential", "share")
    parser.add_argument("--part", choices=names, nargs="*")
    parser.add_argument("--quick", action="store_true", help="every budget / 100 (smoke run)")
    parser.add_argument(
        "--baseline",
        help="share: a checkout of older code to time side by side (fresh processes each)",
    )
    args = parser.parse_args(argv)
    scale = 100 if args.quick else 1
    parts = {
        "dpsniper": dpsniper_table,
        "dpsniper-s6": lambda scale: dpsniper_table(scale, _split),
        "borderline": borderline_table,
        # the borderline rows with session 6's split (a quarter of the budget to selection)
        "borderline-s6": lambda scale: borderline_table(scale, _split),
        "sequential": sequential_table,
        "share": functools.partial(share_table, baseline=args.baseline),
    }
    for part in args.part or ["dpsniper", "sequential", "share"]:
        start = time.perf_counter()
        print(f"\n### {part} (load at start {_load()})\n")
        print("\n".join(parts[part](scale)))
        print(f"\n({time.perf_counter() - start:.0f} s wall, load at end {_load()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
