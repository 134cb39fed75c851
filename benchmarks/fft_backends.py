"""numpy.fft against scipy.fft on the FFTs of the K = 100 ICLP composition (issue 29, item 4).

``compose_pmfs`` of the 100 heterogeneous Laplace pmfs of ``benchmarks/accounting_ratios.py``'s
ICLP workload, with ``scipy.fft`` (as shipped), ``scipy.fft`` with ``workers=1`` passed
explicitly, and ``numpy.fft`` substituted for it (same calls, ``axis``/``n`` as given), CPU time
by ``time.process_time``, the best of ``--repeats`` interleaved rounds, and the composed pmfs'
largest difference. Also one real FFT at the composed length (20 250 points).

    PYTHONPATH=$PWD python benchmarks/fft_backends.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import scipy.fft

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accounting_ratios import D, iclp

from dpaudit.accounting import profiles


def _numpy_module():
    return mock.patch.multiple(
        profiles.scipy.fft,
        rfft=lambda x, n=None, axis=-1: np.fft.rfft(x, n=n, axis=axis),
        irfft=lambda x, n=None, axis=-1: np.fft.irfft(x, n=n, axis=axis),
    )


def _one_worker():
    rfft, irfft = scipy.fft.rfft, scipy.fft.irfft
    return mock.patch.multiple(
        profiles.scipy.fft,
        rfft=functools.partial(rfft, workers=1),
        irfft=functools.partial(irfft, workers=1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    comps, _ = profiles.laplace_components(iclp(100), D, "pessimistic")
    variants = {"scipy.fft": None, "scipy.fft workers=1": _one_worker, "numpy.fft": _numpy_module}
    best = {name: float("inf") for name in variants}
    out = {}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for name, patch in variants.items():
            with patch() if patch else contextlib.nullcontext():
                start = time.process_time()
                out[name] = profiles.compose_pmfs(comps)[1]
                best[name] = min(best[name], time.process_time() - start)
    x = np.random.default_rng(0).random(scipy.fft.next_fast_len(20210, real=True))
    single = {}
    for name, fn in (("scipy.fft", scipy.fft.rfft), ("numpy.fft", np.fft.rfft)):
        single[name] = min(
            (lambda s: (fn(x), time.process_time() - s)[1])(time.process_time()) for _ in range(50)
        )
    for name, t in best.items():
        diff = float(np.max(np.abs(out[name] - out["scipy.fft"])))
        print(f"compose_pmfs K=100 with {name}: {t * 1e3:.2f} ms CPU, max difference {diff:.1e}")
    for name, t in single.items():
        print(f"one rfft of {x.size} points, {name}: {t * 1e3:.3f} ms CPU")
    print("load average before", load, "after", os.getloadavg())


if __name__ == "__main__":
    main()
