"""FFT round-off of the convolution trees: the former ``N eps`` charge, the derived bound, and
the observed distance to the exact convolution (docs/composition.md, "Round-off of the
convolution trees").

Run from the worktree root with ``PYTHONPATH=$PWD``::

    python benchmarks/fft_roundoff.py            # Laplace compositions and adversarial pairs
    python benchmarks/fft_roundoff.py --records CASE [CASE ...]   # golden cases' compositions

The observed distance is to the direct convolution of the same float pmfs in extended
precision (``np.longdouble``), so it measures the trees' round-off alone.
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", nargs="*", default=None)
    args = parser.parse_args()
    if args.records is None:
        laplace_rows()
    else:
        record_rows(args.records)


if __name__ == "__main__":
    main()
