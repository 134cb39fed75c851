"""Round-off of the audit path's Laplace PLD against an exact reference (issue 29 soundness).

For K parts with parameters drawn as in ``tests/accounting/test_laplace_roundoff.py``, the
L1 distance between ``laplace_pld``'s composed pmf and the exact composition (40-digit
part pmfs, convolved in extended precision) beside the margin it charges, and the parts'
worst ratio of measured to bounded error (``laplace_components``).

    PYTHONPATH=. python benchmarks/laplace_roundoff.py
"""

import json
import os
import sys

import mpmath
import numpy as np
from exact_laplace import exact_pmf  # benchmarks/, this script's folder

from dpaudit.accounting.profiles import laplace_components, laplace_pld

CASES = [(1, 1e-2, 0.6), (1, 1e-4, 0.6), (10, 1e-3, 0.1), (100, 1e-3, 0.02)]


def measure(k: int, d: float, high: float) -> dict:
    a = np.random.default_rng(k).uniform(0.1 * high, high, k)
    pld = laplace_pld(a, d)
    out, offset, worst = np.ones(1, dtype=np.longdouble), 0, 0.0
    pmfs, errors = laplace_components(a, d, "pessimistic")
    with mpmath.workdps(40):
        for aj, (_, probs), error in zip(a, pmfs, errors, strict=True):
            lo, exact = exact_pmf(float(aj), d, "pessimistic")
            part = np.array([np.longdouble(mpmath.nstr(x, 30)) for x in exact])
            l1 = float(
                sum(abs(mpmath.mpf(float(p)) - x) for p, x in zip(probs, exact, strict=True))
            )
            worst = max(worst, l1 / error)
            out, offset = np.convolve(out, part), offset + lo
    head = pld.probs[: out.size].astype(np.longdouble)
    distance = float(np.sum(np.abs(head - out))) + float(np.sum(pld.probs[out.size :]))
    return {
        "K": k,
        "d": d,
        "distance": distance,
        "margin": pld.margin,
        "fft_part": pld.probs.size * float(np.finfo(float).eps),
        "worst_part_ratio": worst,
    }


def main() -> None:
    rows = [measure(*case) for case in CASES]
    print(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
