r"""Black-box tightness: dpaudit's certified lower bounds on the StatDP / DP-Sniper mechanisms.

Every mechanism of ``statdp_mechanisms`` (plain numpy samplers written from the
papers) is audited with :func:`dpaudit.blackbox_audit` against the claim
``epsilon = 0.1``, twice, with a fixed rule and no best-of-many:

* ``model`` — the model-guided statistic: the privacy loss of a catalogue
  model with the sampler's law (``statdp_mechanisms.reference_model``);
* ``logistic`` — the model-free statistic: logistic regression (DP-Sniper's
  default classifier) on the release values for continuous releases and on
  one-hot codes for discrete ones (sparse-vector patterns, report-noisy-max
  indices). Never the MLP as well: one classifier per row, fixed in advance.

Each run gets every input pair of the tools (StatDP's patterns; ``pairs=``),
selects one pair, direction and threshold on a selection set and certifies
that single event on fresh releases (Clopper–Pearson, 95%). Both numbers are
certified lower bounds; they are reported side by side, never maximised.

Budget (per row, stated in the JSON and the table): ``samples`` certification
releases per dataset; ``select_samples = min(samples / 10, 2 10^6)`` selection
releases per dataset and pair.

The published figures are from DP-Sniper's evaluation logs
(``eth-sri/dp-sniper``, ``eval_sp2021/reference-results/dd_search_reg_data.log``
for DP-Sniper with logistic regression, ``statdp_1_data.log`` for StatDP): the
point estimate and the lower confidence bound ``eps_lcb`` that DP-Sniper's
authors computed on the event each tool found (StatDP itself reports only the
epsilon where its p-value crosses 0.05, also listed).

Run ``python benchmarks/blackbox_tightness.py`` (full budgets: tens of minutes on
2 cores; writes ``benchmarks/results/blackbox_tightness.json`` and ``.md``), or
``--quick`` (tiny budgets, three rows, under a minute of CPU; writes nothing unless
``--out`` is given). ``--rows svt5 laplace`` runs a subset.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import statdp_mechanisms as sm

import dpaudit
from dpaudit.blackbox import AutoPairs, blackbox_audit, certified_epsilon

CONFIDENCE = 0.95
METHODS = ("model", "logistic")
# The automatic-pairs column: pairs="auto" around the tools' base input, with the model-free
# statistic (the reference models read record datasets, the auto candidates are answers).
AUTO = "auto"
AUTO_STATISTIC = "logistic"
# Default (moderate) budget: at most this many certification releases per dataset, so the
# whole table runs in minutes; --full uses each row's own (published-comparison) budget.
MODERATE_SAMPLES = 1_000_000
RESULTS = Path(__file__).resolve().parent / "results"
_SELECT_PER_PAIR = 2_000_000
_SOURCE = "eth-sri/dp-sniper eval_sp2021/reference-results"


@dataclasses.dataclass(frozen=True)
class Row:
    """One benchmark mechanism: sampler, claim, input pairs, reference model, budget, literature.

    Attributes:
        key: short name (``"svt5"``).
        title: the mechanism as the papers name it.
        sampler: ``sampler(data, n, key)``.
        claim: the claimed guarantee (epsilon 0.1).
        pairs: ``(pattern name, D, D')`` — the tools' input patterns as datasets.
        answers: ``(pattern name, a, a')`` — the same pairs as query answers.
        reference: builds the reference model (a catalogue law) for ``method="model"``.
        features: classifier features (``None``: the release values).
        auto_sampler: the same mechanism reading the base input of ``pairs="auto"``
            directly (query answers or histogram counts).
        auto_data: that base input (StatDP's ``(1, ..., 1)``).
        auto_pairs: the :class:`~dpaudit.blackbox.AutoPairs` of the row (its kind stated).
        true_epsilon: the mechanism's true epsilon (``inf`` when not DP).
        true_note: where ``true_epsilon`` comes from.
        samples: certification releases per dataset (full run).
        published: ``{"dpsniper": (estimate, lcb), "statdp": (crossing, estimate, lcb)}``.
        control: a correct mechanism (its bound must stay at or below 0.1).
        oracle_cells: ``(a, a') -> (p_cells, q_cells)``, the exact law on a partition
            of the release space, for the oracle bound (``None``: discrete, from the table).
    """

    key: str
    title: str
    sampler: Callable
    claim: dpaudit.Claim
    pairs: tuple
    answers: tuple
    reference: Callable[[], dpaudit.Mechanism]
    features: Callable | None
    true_epsilon: float
    true_note: str
    samples: int
    published: dict
    control: bool = False
    oracle_cells: Callable | None = None
    chunk_size: int | None = None
    auto_sampler: Callable | None = None
    auto_data: object = None
    auto_pairs: AutoPairs | None = None

    def select_samples(self, samples: int) -> int:
        """The fixed selection rule: ``min(samples / 10, 2 10^6)`` per pair and dataset."""
        return max(2_000, min(samples // 10, _SELECT_PER_PAIR))


def _claim(adjacency: str, norm: str, reference: str) -> dpaudit.Claim:
    return dpaudit.Claim(
        epsilon=sm.EPSILON,
        adjacency=adjacency,
        sensitivity_norm=norm,
        sensitivity=1.0,
        reference=reference,
    )


def _laplace_cells(scale):
    def cells(a, b, index=0):
        lo = min(a[index], b[index]) - 40 * scale
        x = np.linspace(lo, max(a[index], b[index]) + 40 * scale, 400_001)
        return tuple(_laplace_masses((x - c[index]) / scale) for c in (a, b))

    return cells


def _laplace_cdf(t):
    """Laplace(0, 1) CDF, in the complement form right of 0 (kept for the cell masses below)."""
    return np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0)), 1 - 0.5 * np.exp(-np.maximum(t, 0)))


def _laplace_masses(t):
    """Masses of the cells between consecutive points ``t`` under Laplace(0, 1), tails exact."""
    lo, hi = t[:-1], t[1:]
    width = -np.expm1(-(hi - lo))
    left = 0.5 * np.exp(np.minimum(hi, 0)) * width  # both ends <= 0
    right = 0.5 * np.exp(-np.maximum(lo, 0)) * width  # both ends >= 0
    mixed = _laplace_cdf(hi) - _laplace_cdf(lo)
    return np.where(hi <= 0, left, np.where(lo >= 0, right, mixed))


def _max_value_cells(noise):
    def cells(a, b):
        scale = 2.0 / sm.EPSILON
        x = np.linspace(
            min(a.min(), b.min()) - 40 * scale, max(a.max(), b.max()) + 40 * scale, 400_001
        )
        x = np.union1d(x, np.concatenate([a, b]))  # the exponential law's kinks
        cdf = [np.asarray(sm.NoisyMaxValue(c, scale, noise).cdf(x)) for c in (a, b)]
        return np.diff(cdf[0]), np.diff(cdf[1])

    return cells


def _histogram_cells(scale):
    inner = _laplace_cells(scale)

    def cells(a, b):
        i = int(np.flatnonzero(a != b)[0])  # the other bins have the same law under both
        return inner(a, b, i)

    return cells


def rows() -> list[Row]:
    """The benchmark: StatDP / DP-Sniper mechanisms at claimed epsilon 0.1, with controls."""
    eps = sm.EPSILON
    svt_pairs = [
        (name, *sm.counting_pair(a, b)) for name, a, b in sm.statdp_patterns(10, componentwise=True)
    ]
    svt_answers = tuple(sm.statdp_patterns(10, componentwise=True))
    rnm_pairs = [
        (name, *sm.counting_pair(a, b)) for name, a, b in sm.statdp_patterns(5, componentwise=True)
    ]
    rnm_answers = tuple(sm.statdp_patterns(5, componentwise=True))
    hist_answers = tuple(sm.statdp_patterns(5, componentwise=False))
    hist_pairs = [(name, *sm.histogram_pair(a, b)) for name, a, b in hist_answers]
    replace = "replace-one"
    svt_features = sm.one_hot((-1.0, 0.0, 1.0))

    def outcome(samples, true_eps, note, published, control):
        # the fields every row builder shares: budget, known answer, published figures
        return {
            "samples": samples,
            "true_epsilon": true_eps,
            "true_note": note,
            "published": published,
            "control": control,
        }

    def auto_inputs(mechanism, key, base, kind, **params):
        # pairs="auto": the mechanism on the answers / counts themselves, StatDP's base input
        return {
            "auto_sampler": sm.sampler(mechanism, np.asarray, key, **params),
            "auto_data": base,
            "auto_pairs": AutoPairs(kind=kind),
        }

    def svt_row(key, algorithm, threshold, samples, true_eps, note, published, control=False):
        params = {"algorithm": algorithm, "threshold": threshold, "epsilon": eps, "cutoff": 1}
        return Row(
            key=key,
            title=f"SVT, Lyu et al. Alg. {algorithm}" + (" (c = 1)" if algorithm in (1, 4) else ""),
            sampler=sm.sampler(sm.sparse_vector, sm.column_counts, key, **params),
            claim=_claim(replace, "linf", f"Lyu, Su & Li 2017, Alg. {algorithm}"),
            pairs=tuple(svt_pairs),
            answers=svt_answers,
            reference=lambda: sm.reference_model(
                "sparse-vector", algorithm=algorithm, threshold=threshold, cutoff=1
            ),
            features=svt_features,
            **outcome(samples, true_eps, note, published, control),
            **auto_inputs(sm.sparse_vector, key, np.ones(10), "answers", **params),
        )

    def rnm_row(key, noise, release, samples, true_eps, note, published, control=False):
        return Row(
            key=key,
            title=f"ReportNoisyMax, {noise} noise, returns the {release}",
            sampler=sm.sampler(
                sm.report_noisy_max,
                sm.column_counts,
                key,
                epsilon=eps,
                noise=noise,
                release=release,
            ),
            claim=_claim(replace, "linf", "Ding et al. 2018, Algs. 5-8"),
            pairs=tuple(rnm_pairs),
            answers=rnm_answers,
            reference=lambda: sm.reference_model("report-noisy-max", noise=noise, release=release),
            features=sm.one_hot(np.arange(5.0)) if release == "index" else None,
            **outcome(samples, true_eps, note, published, control),
            oracle_cells=_max_value_cells(noise) if release == "value" else None,
            chunk_size=1 << 19 if release == "value" else None,
            **auto_inputs(
                sm.report_noisy_max, key, np.ones(5), "answers",
                epsilon=eps, noise=noise, release=release,
            ),
        )  # fmt: skip

    def hist_row(key, scale, samples, true_eps, note, published, control=False):
        return Row(
            key=key,
            title=f"NoisyHist, Lap({'1/eps' if control else 'eps'}) per bin",
            sampler=sm.sampler(
                sm.noisy_hist, lambda d: sm.histogram_counts(d, 5), key, epsilon=eps, scale=scale
            ),
            claim=_claim("add-remove", "l1", "Ding et al. 2018, Algs. 9-10"),
            pairs=tuple(hist_pairs),
            answers=hist_answers,
            reference=lambda: sm.reference_model("noisy-hist", scale=scale),
            features=None,
            **outcome(samples, true_eps, note, published, control),
            oracle_cells=_histogram_cells(scale),
            **auto_inputs(
                sm.noisy_hist, key, np.ones(5, dtype=np.int64), "histogram", epsilon=eps,
                scale=scale,
            ),
        )  # fmt: skip

    laplace = Row(
        key="laplace",
        title="Laplace mechanism",
        sampler=sm.sampler(sm.laplace_mechanism, lambda d: np.asarray(d, float)[0], "laplace"),
        claim=_claim(replace, "l1", "Dwork & Roth 2014, Thm 3.6"),
        # the one-record encoding holds values in [0, 1]: the pattern "one above" (1 vs 0);
        # "one below" (1 vs 2) is the same pair shifted by one.
        pairs=(("one above", np.array([1.0]), np.array([0.0])),),
        answers=(("one above", np.array([1.0]), np.array([0.0])),),
        reference=lambda: sm.reference_model("laplace"),
        features=None,
        true_epsilon=eps,
        true_note="Dwork & Roth 2014, Thm 3.6",
        samples=1_000_000_000,
        published={"dpsniper": (0.099061, 0.096804), "statdp": (0.09875, 0.10008, 0.099814)},
        oracle_cells=lambda a, b: _laplace_cells(1 / eps)(a, b),
        chunk_size=1 << 20,
        **auto_inputs(sm.laplace_mechanism, "laplace", np.array([1.0]), "answers"),
    )
    return [
        laplace,
        hist_row(
            "noisyhist2",
            eps,
            10_000_000,
            1 / eps,
            "scale eps instead of 1/eps: ratio e^{1/eps}",
            {"dpsniper": (4.6032, 4.6020), "statdp": (8.8594, 9.7496, 9.7169)},
        ),
        rnm_row(
            "rnm3",
            "laplace",
            "value",
            300_000_000,
            5 * eps / 2,
            "k eps / 2, k = 5 queries (derived in statdp_mechanisms)",
            {"dpsniper": (0.24999, 0.24782), "statdp": (0.17688, 0.20013, 0.19914)},
        ),
        rnm_row(
            "rnm4",
            "exponential",
            "value",
            10_000_000,
            math.inf,
            "support moves with the max: no finite epsilon",
            {"dpsniper": (0.34847, 0.34634), "statdp": (0.18563, 0.19699, 0.19602)},
        ),
        svt_row(
            "svt4",
            4,
            1.0,
            100_000_000,
            (1 + 6) * eps / 4,
            "(1 + 6c) eps / 4, Lyu et al. 2017 (c = 1)",
            {"dpsniper": (0.17090, 0.16868), "statdp": (0.19125, 0.17273, 0.17086)},
        ),
        svt_row(
            "svt5",
            5,
            1.0,
            150_000_000,
            math.inf,
            "an output impossible under D' (Lyu et al. 2017)",
            {"dpsniper": (1.7628, 1.7612), "statdp": (3.2356, math.inf, 14.314)},
        ),
        svt_row(
            "svt6",
            6,
            1.0,
            30_000_000,
            math.inf,
            "no cutoff: unbounded over query streams (Lyu et al. 2017)",
            {"dpsniper": (0.27421, 0.27204), "statdp": (0.35125, 0.32558, 0.32204)},
        ),
        hist_row(
            "noisyhist1",
            1 / eps,
            10_000_000,
            eps,
            "Dwork & Roth 2014, Thm 3.6",
            {"dpsniper": (0.10004, 0.097794), "statdp": (0.0975, 0.083787, 0.082831)},
            control=True,
        ),
        rnm_row(
            "rnm1",
            "laplace",
            "index",
            10_000_000,
            eps,
            "at most eps (Dwork & Roth 2014, Claim 3.9 with scale 2/eps)",
            {"dpsniper": (0.094515, 0.092254), "statdp": (0.091875, 0.092404, 0.091952)},
            control=True,
        ),
        svt_row(
            "svt1",
            1,
            0.5,
            10_000_000,
            eps,
            "Lyu et al. 2017, Thm 2",
            {"dpsniper": (0.088068, 0.085798), "statdp": (0.21625, 0.032741, 0.029754)},
            control=True,
        ),
    ]


def row(key: str) -> Row:
    """The benchmark row named ``key``."""
    table = {r.key: r for r in rows()}
    if key not in table:
        raise ValueError(f"no benchmark row {key!r}; known: {sorted(table)}.")
    return table[key]


# ---------------------------------------------------------------- oracle (exact laws)


def oracle_bound(p_cells, q_cells, n: int, confidence: float = CONFIDENCE) -> float:
    """The certified bound the best union of cells would reach with ``n`` releases (expected counts).

    Cells are sorted by ``p/q`` (Neyman–Pearson) and every prefix union is
    scored by :func:`dpaudit.blackbox.certified_epsilon` at its expected counts.
    Not a certified figure: what an auditor who knew the law and the best pair
    would obtain at this budget, to show how much the event selection loses.
    """
    p, q = np.asarray(p_cells, float), np.asarray(q_cells, float)
    keep = p > 0
    p, q = p[keep], q[keep]
    with np.errstate(divide="ignore"):
        order = np.argsort(-(np.log(p) - np.log(np.maximum(q, 0.0))))
    cp, cq = np.cumsum(p[order]), np.cumsum(q[order])
    m = np.unique(np.geomspace(1, cp.size, 4000).astype(int)) - 1
    kp, kq = np.minimum(cp[m], 1.0) * n, np.minimum(cq[m], 1.0) * n
    return float(np.max(certified_epsilon(kp, n, kq, n, confidence=confidence)))


def row_oracle(r: Row, n: int) -> dict:
    """Exact epsilon on the row's pairs and the oracle bound at ``n`` (best pair and direction)."""
    # Continuous rows: the pairs attain the true epsilon in closed form (statdp_mechanisms);
    # discrete rows: the exact maximum of the pattern ratios.
    best_ratio, best_bound = (r.true_epsilon if r.oracle_cells else -math.inf), 0.0
    reference = None if r.oracle_cells else r.reference()
    for (_, a, b), (_, d, dp) in zip(r.answers, r.pairs, strict=True):
        if r.oracle_cells is not None:
            p, q = r.oracle_cells(np.asarray(a, float), np.asarray(b, float))
        else:
            p, q = _discrete_cells(reference, d, dp)
        for x, y in ((p, q), (q, p)):
            if r.oracle_cells is None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(x > 0, np.log(x) - np.log(np.maximum(y, 0.0)), -np.inf)
                best_ratio = max(best_ratio, float(np.max(ratio)))
            best_bound = max(best_bound, oracle_bound(x, y, n))
    return {"epsilon_on_pairs": best_ratio, "oracle_bound": best_bound, "n": n}


def _discrete_cells(reference, d, dp):
    law_p = reference.release_distribution(d)
    law_q = reference.release_distribution(dp)
    if isinstance(law_p, sm.PatternTable):
        return np.exp(np.asarray(law_p.log_table)), np.exp(np.asarray(law_q.log_table))
    return np.asarray(law_p.probs), np.asarray(law_q.probs)  # NoisyArgmax


# ---------------------------------------------------------------- runs


def audit_row(
    r: Row,
    method: str,
    *,
    samples: int | None = None,
    select_samples: int | None = None,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    progress: bool | None = False,
):
    """``dpaudit.blackbox_audit`` of row ``r`` with ``method``.

    ``"model"`` or ``"logistic"``: the hand-chosen pairs (StatDP's patterns as datasets);
    ``"auto"``: ``pairs="auto"`` around the row's base input, logistic statistic.
    """
    if method not in (*METHODS, AUTO):
        raise ValueError(f"method must be one of {(*METHODS, AUTO)}, got {method!r}.")
    samples = r.samples if samples is None else samples
    select = r.select_samples(samples) if select_samples is None else select_samples
    options = {"reference": r.reference()} if method == "model" else {"features": r.features}
    if method == AUTO:
        inputs = {"sampler": r.auto_sampler, "data": r.auto_data, "pairs": r.auto_pairs}
    else:
        inputs = {"sampler": r.sampler, "pairs": [(d, dp) for _, d, dp in r.pairs]}
    return blackbox_audit(
        claim=r.claim,
        statistic=AUTO_STATISTIC if method == AUTO else method,
        samples=samples,
        select_samples=select,
        confidence=confidence,
        seed=seed,
        chunk_size=r.chunk_size,
        name=r.key,
        progress=progress,
        **inputs,
        **options,
    )


def run_row(
    r: Row,
    *,
    samples: int | None = None,
    seed: int = 0,
    oracle: bool = True,
) -> dict:
    """Both audits of a row and its oracle, as a JSON-able dict (with wall and CPU seconds)."""
    samples = r.samples if samples is None else samples
    out = {
        "key": r.key,
        "title": r.title,
        "control": r.control,
        "claim_epsilon": r.claim.epsilon,
        "true_epsilon": _jf(r.true_epsilon),
        "true_note": r.true_note,
        "pairs": [name for name, _, _ in r.pairs],
        "samples": samples,
        "select_samples_per_pair": r.select_samples(samples),
        "published": {k: [_jf(v) for v in vals] for k, vals in r.published.items()},
        "results": {},
    }
    for method in (*METHODS, AUTO):
        cpu = time.process_time()
        result = audit_row(r, method, samples=samples, seed=seed)
        record = result.to_dict()
        record["cpu_seconds"] = time.process_time() - cpu
        record["pair_name"] = _pair_name(r, method, result)
        if method == AUTO:
            record["auto_pairs"] = len(auto_names(r))
        out["results"][method] = record
        print(
            f"  {r.key:11s} {method:8s} eps >= {result.epsilon_lower:.4f} "
            f"({result.verdict}, {result.seconds:.0f} s wall, {record['cpu_seconds']:.0f} s CPU, "
            f"pair {record['pair_name']!r})",
            file=sys.stderr,
            flush=True,
        )
    if oracle:
        out["oracle"] = {k: _jf(v) for k, v in row_oracle(r, samples).items()}
    return out


def auto_names(r: Row) -> tuple:
    """The names of the automatic candidates of row ``r`` (as ``pairs="auto"`` builds them)."""
    from dpaudit.blackbox.autopairs import auto_pairs

    return auto_pairs(r.auto_data, r.claim, r.auto_pairs).names


def _pair_name(r: Row, method: str, result) -> str:
    if method == AUTO:
        return auto_names(r)[result.event.pair]
    return r.pairs[result.event.pair][0]


def _jf(v):
    v = float(v)
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def _fmt(v, digits=4):
    if v is None:
        return "–"
    if isinstance(v, str):
        return "∞" if v == "inf" else v
    return f"{v:.{digits}g}"


def _goal(rec: dict, bound: float) -> str:
    """Controls: at most the claimed epsilon. Faulty rows: against the best published lower
    confidence bound and, where finite, 0.9 x the true epsilon."""
    if rec["control"]:
        return "≤ 0.1 ✓" if bound <= rec["claim_epsilon"] else "✗ above 0.1"
    best = max(vals[-1] for vals in rec["published"].values())
    marks = ["≥ best lcb ✓" if bound >= best else "< best lcb ✗"]
    if rec["true_epsilon"] != "inf":
        marks.append("≥ 0.9 true ✓" if bound >= 0.9 * rec["true_epsilon"] else "< 0.9 true ✗")
    return ", ".join(marks)


def _count(n: int) -> str:
    """``150000000 -> '1.5e8'``."""
    mantissa, exponent = f"{n:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def markdown(records: list[dict], header: dict) -> str:
    """The table of BENCHMARKS.md (bounds in bold; the pair certified; wall / CPU seconds)."""
    lines = [
        f"Claimed epsilon 0.1, confidence {CONFIDENCE:g}; {header['machine']}; engine "
        f"`dpaudit/blackbox/` at {header.get('engine', 'unknown')}.",
        "",
        "| mechanism | true ε | DP-Sniper est. / lcb | StatDP cross. / est. / lcb | "
        "dpaudit model-guided | dpaudit logistic | dpaudit logistic, auto pairs | oracle | "
        "budget (cert. + select) | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        cells = []
        for method in (*METHODS, AUTO):
            m = rec["results"][method]
            cells.append(
                f"**{_fmt(m['epsilon_lower'])}** ({m['pair_name']}; "
                f"{m['seconds']:.0f} / {m.get('cpu_seconds', float('nan')):.0f} s)"
            )
        ds, st = rec["published"]["dpsniper"], rec["published"]["statdp"]
        oracle = rec.get("oracle", {}).get("oracle_bound")
        budget = (
            f"{_count(rec['samples'])} + {len(rec['pairs'])}×"
            f"{_count(rec['select_samples_per_pair'])}"
        )
        name = rec["title"] + (" (control)" if rec["control"] else "")
        goals = [_goal(rec, rec["results"][m]["epsilon_lower"]) for m in METHODS]
        auto, hand = (rec["results"][m]["epsilon_lower"] for m in (AUTO, "logistic"))
        auto_mark = "auto ≥ hand ✓" if auto >= hand else "auto < hand ✗"
        budget += f" (auto: {rec['results'][AUTO].get('auto_pairs', '?')} pairs)"
        lines.append(
            f"| {name} | {_fmt(rec['true_epsilon'])} | {_fmt(ds[0])} / {_fmt(ds[1])} | "
            f"{_fmt(st[0])} / {_fmt(st[1])} / {_fmt(st[2])} | {cells[0]} | {cells[1]} | "
            f"{cells[2]} | {_fmt(oracle)} | {budget} | model: {goals[0]}; logistic: "
            f"{goals[1]}; {auto_mark} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny budgets, three rows, < 1 min")
    parser.add_argument(
        "--full",
        action="store_true",
        help="each row's own budget (up to 1e9 releases: hours); default at most 1e6 per row",
    )
    parser.add_argument("--rows", nargs="*", help="row keys to run (default: all)")
    parser.add_argument("--out", type=Path, help="JSON output (full run: results/...json)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--render", type=Path, help="print the table of a results JSON and stop")
    args = parser.parse_args(argv)
    if args.render is not None:
        payload = json.loads(args.render.read_text())
        print(markdown(payload["rows"], payload["header"]))
        return 0
    table = rows()
    keys = args.rows or (["noisyhist2", "svt5", "noisyhist1"] if args.quick else None)
    if keys:
        unknown = set(keys) - {r.key for r in table}
        if unknown:
            parser.error(f"unknown rows {sorted(unknown)}; known: {[r.key for r in table]}")
        table = [r for r in table if r.key in keys]
    header = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "confidence": CONFIDENCE,
        "claim_epsilon": sm.EPSILON,
        "quick": args.quick,
        "full": args.full,
        "seed": args.seed,
        "source_published": _SOURCE,
        "engine": _engine_version(),
    }
    default_out = RESULTS / (
        "blackbox_tightness.json" if args.full else "blackbox_tightness_moderate.json"
    )
    out = args.out or (None if args.quick else default_out)
    start = time.perf_counter()
    records = []
    for r in table:
        samples = (
            20_000 if args.quick else (None if args.full else min(r.samples, MODERATE_SAMPLES))
        )
        records.append(run_row(r, samples=samples, seed=args.seed, oracle=not args.quick))
        header["seconds"] = time.perf_counter() - start
        if out is not None:  # after every row: a long run keeps what it has done
            _write(out, {"header": header, "rows": records}, markdown(records, header))
    print(markdown(records, header))
    return 0


def _engine_version() -> str:
    """The last commit of ``dpaudit/blackbox/`` (and whether its files differ from it)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "log", "-1", "--format=%h", "--", "dpaudit/blackbox"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "--", "dpaudit/blackbox"], cwd=root, check=False
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}{' (modified)' if dirty else ''}"


def _write(out: Path, payload: dict, text: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    out.with_suffix(".md").write_text(text + "\n")
    os.chmod(out, 0o644)
    os.chmod(out.with_suffix(".md"), 0o644)


if __name__ == "__main__":
    raise SystemExit(main())
