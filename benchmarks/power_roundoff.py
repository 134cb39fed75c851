"""Round-off of the power path (equal parts): the FFT model against extended precision and
the margins it gives (docs/composition.md, "Equal parts: the power path").

Run from the worktree root with ``PYTHONPATH=$PWD``::

    python benchmarks/power_roundoff.py

Prints (1) the largest componentwise error of real FFTs of uniform and spiky pmfs against
``np.longdouble`` transforms, in units of ``u ||p||_1`` per binary level (the model assumes
``FFT_ULPS_PER_LEVEL``); (2) ``count``-fold powers against the exact power in extended
precision, observed L1 distance against the margin; (3) the margins of 10 000 equal Laplace
parts and of DP-SGD (``q = 0.01``, ``sigma = 1``, ``T = 1000``) and the latter's epsilon(1e-5).
"""

import math

import numpy as np
import scipy.fft

from dpaudit.accounting import composition
from dpaudit.accounting.composition import LaplaceComponent, compose_accounting
from mechanisms.dpsgd import dpsgd_accounting

U = 2.0**-53


def _pmf(m: int, kind: str) -> np.ndarray:
    if kind == "uniform":
        p = np.random.default_rng(m).random(m)
    else:
        p = np.full(m, 1e-4)
        p[m // 3] = 1.0
    return p / p.sum()


def forward_ulps_per_level() -> float:
    worst = 0.0
    for m in (40, 301, 2000):
        for kind in ("uniform", "spiky"):
            p = _pmf(m, kind)
            for n in (scipy.fft.next_fast_len(25 * m, real=True), 8192, 59_049):
                exact = scipy.fft.rfft(p.astype(np.longdouble), n=n)
                error = np.max(np.abs((scipy.fft.rfft(p, n=n) - exact).astype(np.clongdouble)))
                worst = max(worst, float(error) / (math.log2(n) * U * float(p.sum())))
    return worst


def powers() -> None:
    for kind in ("uniform", "spiky"):
        for count in (25, 200):
            p = _pmf(40, kind)
            offset, out, margin = composition.self_compose_pmf(-3, p, count, 0.01, 1e-15)
            exact = np.ones(1, dtype=np.longdouble)
            for _ in range(count):
                exact = np.convolve(exact, p.astype(np.longdouble))
            full = np.zeros(exact.size, dtype=np.longdouble)
            start = offset + 3 * count
            full[start : start + out.size] = out
            observed = float(np.sum(np.abs(full - exact)))
            print(f"  {kind:8s} count {count:4d}: observed {observed:.2g}, margin {margin:.2g}")


def margins() -> None:
    seen = []
    original = composition.self_compose_pmf

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        seen.append(result[2])
        return result

    composition.self_compose_pmf = spy
    try:
        compose_accounting([LaplaceComponent(0.1)], [10_000])
        print("  10 000 Laplace parts (a = 0.1): margins", [f"{x:.3g}" for x in seen])
        seen.clear()
        acc = dpsgd_accounting(1.0, 0.01, 1000)
        print("  DP-SGD q = 0.01, sigma = 1, T = 1000: margins", [f"{x:.3g}" for x in seen])
        print(
            f"  DP-SGD epsilon(1e-5): upper {acc.epsilon_upper(1e-5):.10g}, "
            f"lower {acc.epsilon_lower(1e-5):.10g}"
        )
    finally:
        composition.self_compose_pmf = original


if __name__ == "__main__":
    print(f"forward FFT, largest componentwise error: {forward_ulps_per_level():.3f} u per level")
    print("powers against extended precision:")
    powers()
    print("margins:")
    margins()
