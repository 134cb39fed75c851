"""FFT round-off of the convolution trees: the former ``N eps`` charge, the derived bound, and
the observed distance to the exact convolution (docs/composition.md, "Round-off of the
convolution trees").

Run from the worktree root with ``PYTHONPATH=$PWD``::

    python benchmarks/fft_roundoff.py            # Laplace compositions and adversarial pairs
    python benchmarks/fft_roundoff.py --records CASE [CASE ...]   # golden cases' compositions
    python benchmarks/fft_roundoff.py --windowed  # the windowed tree (docs: "... windowed tree")

The observed distance is to the direct convolution of the same float pmfs in extended
precision (``np.longdouble``), so it measures the trees' round-off alone; for the windowed
tree it is to the same tree run in long double (the same windows and folds).
"""

import argparse
import sys
from pathlib import Path

import numpy as np

from dpaudit.accounting import composition, profiles

EPS = float(np.finfo(float).eps)


def _direct(components):
    offset, out = 0, np.ones(1, dtype=np.longdouble)
    for o, p in components:
        out, offset = np.convolve(out, np.asarray(p, dtype=np.longdouble)), offset + o
    return offset, out


def _row(name, components, exact=True):
    _, probs, bound = profiles.compose_pmfs_bounded(components)
    observed = float("nan")
    if exact:
        _, ref = _direct(components)
        head = np.zeros(ref.size, dtype=np.longdouble)
        head[: probs.size] = probs
        observed = float(np.sum(np.abs(head - ref)))
    n = probs.size
    print(
        f"| {name} | {n} | {n * EPS:.2e} | {bound:.2e} | {bound / (n * EPS):.2f} | {observed:.1e} |"
    )


def laplace_rows():
    """The 40-digit test's compositions (and two larger ones, bound only)."""
    print("| composition | N | N eps (old) | derived bound (new) | new/old | observed |")
    print("|---|---|---|---|---|---|")
    cases = [(1, 1e-2, 0.6, True), (1, 1e-4, 0.6, True), (10, 1e-3, 0.1, True)]
    cases += [(100, 1e-3, 0.02, True), (10, 1e-4, 0.3, True), (100, 1e-4, 0.05, False)]
    cases += [(1000, 1e-4, 0.01, False)]
    for k, d, high, exact in cases:
        a = np.random.default_rng(k).uniform(0.1 * high, high, k)
        for estimate in ("pessimistic", "optimistic"):
            pmfs, _ = profiles.laplace_components(a, d, estimate)
            _row(f"Laplace K={k} d={d:g} {estimate[:3]}", pmfs, exact)
    n = 20_000
    rng = np.random.default_rng(0)
    wide = rng.random(n)
    wide /= wide.sum()
    two = np.zeros(n)
    two[0], two[-1] = 0.6, 0.4
    other = np.zeros(n)
    other[0], other[-1] = 0.9, 0.1
    _row("two-point * two-point (20 000 each)", [(0, two), (0, other)])
    _row("two-point * wide (20 000 each)", [(0, two), (0, wide)])
    _row("wide * wide (20 000 each)", [(0, wide), (0, wide[::-1].copy())])


def record_rows(cases):
    """Every compose_pmfs_bounded call of the golden cases: largest N, charges summed."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "golden"))
    import golden_cases  # the golden cases live outside the package

    calls = []
    original = profiles.compose_pmfs_bounded

    def logged(components):
        result = original(components)
        calls.append((result[1].size, result[2]))
        return result

    profiles.compose_pmfs_bounded = logged
    composition.compose_pmfs_bounded = logged
    print(
        "| record | calls | largest N | sum N eps (old) | sum derived (new) | largest new - old |"
    )
    print("|---|---|---|---|---|---|")
    for case in cases:
        calls.clear()
        golden_cases.run_case(case)
        if not calls:
            print(f"| {case} | 0 | | | | |")
            continue
        old = sum(n * EPS for n, _ in calls)
        new = sum(b for _, b in calls)
        moved = max(b - n * EPS for n, b in calls)
        largest = max(n for n, _ in calls)
        print(f"| {case} | {len(calls)} | {largest} | {old:.2e} | {new:.2e} | {moved:.1e} |")


def _windowed_row(name, pmfs):
    tail = 1e-15
    _, probs, _, _, bound = composition.compose_windowed(pmfs, tail)
    reference = composition.compose_windowed(
        [(o, np.asarray(p, dtype=np.longdouble)) for o, p in pmfs], tail
    )
    observed = float(np.sum(np.abs(probs.astype(np.longdouble) - reference[1])))
    linear = sum(np.asarray(p).size for _, p in pmfs) - len(pmfs) + 1
    n = probs.size
    print(
        f"| {name} | {len(pmfs)} | {n} | {'yes' if n < linear else 'no'} | {n * EPS:.2e} "
        f"| {bound:.2e} | {bound / (n * EPS):.1f} | {observed:.1e} | {observed / bound:.1e} |"
    )


def windowed_rows():
    """The windowed tree (``composition.compose_windowed``): old charge, derived bound, observed."""
    print(
        "| composition | pmfs | N | folded | N eps (old) | derived bound (new) | new/old "
        "| observed | observed/bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for k, d, lo, hi in [
        (64, 1e-3, 0.002, 0.08),
        (200, 1e-4, 0.01, 0.1),
        (1000, 1e-4, 0.001, 0.02),
    ]:
        a = rng.uniform(lo, hi, k)
        for estimate in ("pessimistic", "optimistic"):
            pmfs, _ = profiles.laplace_components(a, d, estimate)
            _windowed_row(f"Laplace K={k} d={d:g} {estimate[:3]}", pmfs)
    two_point = []
    for width in rng.integers(20, 400, 100).tolist():
        p = np.zeros(width)
        p[0], p[-1] = 0.5 - 1e-3, 0.5 + 1e-3
        two_point.append((-(width // 2), p))
    _windowed_row("two atoms near 1/2, widths 20-400", two_point)
    x = np.arange(-3000, 3001)
    gauss = np.exp(-0.5 * (x / 300.0) ** 2)
    _windowed_row(
        "40 of them + a long Gaussian pmf", [*two_point[:40], (-3000, gauss / gauss.sum())]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", nargs="*", default=None)
    parser.add_argument("--windowed", action="store_true")
    args = parser.parse_args()
    if args.windowed:
        windowed_rows()
    elif args.records is None:
        laplace_rows()
    else:
        record_rows(args.records)


if __name__ == "__main__":
    main()
