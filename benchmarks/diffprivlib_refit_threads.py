"""diffprivlib LogisticRegression refits on one BLAS thread against the default thread count.

The adapter refits the model once per release (tests/adapters/test_diffprivlib.py's slow
audits: ~15 000 refits each). Its L-BFGS-B calls OpenBLAS a few thousand times per fit on two
parameters; run with the ``libraries`` extra (scikit-learn < 1.8)::

    PYTHONPATH=$PWD python benchmarks/diffprivlib_refit_threads.py [--fits 50]

Prints CPU and wall milliseconds per refit, default threads then one thread, and the load.
"""

import argparse
import os
import time
import warnings

import numpy as np


def per_fit(fits: int) -> tuple[float, float]:
    """CPU and wall milliseconds per refit of a 10-record LogisticRegression.

    Args:
        fits: how many refits to time (after 5 untimed ones).

    Returns:
        (CPU ms, wall ms) per refit.
    """
    import diffprivlib as dpl
    from sklearn.base import clone

    x, y = np.linspace(0.0, 1.0, 10)[:, None], np.array([0, 1] * 5)
    model = dpl.models.LogisticRegression(epsilon=1.0, data_norm=1.0)

    def run(n):
        for seed in range(n):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clone(model).set_params(random_state=seed).fit(x, y)

    run(5)
    cpu, wall = time.process_time(), time.perf_counter()
    run(fits)
    return 1e3 * (time.process_time() - cpu) / fits, 1e3 * (time.perf_counter() - wall) / fits


def main():
    """Time refits on the default BLAS threads, then on one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=50)
    fits = parser.parse_args().fits
    from dpaudit.core.threads import one_blas_thread

    print(f"load {os.getloadavg()[0]:.1f}")
    cpu, wall = per_fit(fits)
    print(f"default threads: {cpu:7.1f} ms CPU {wall:7.1f} ms wall per refit")
    with one_blas_thread():
        cpu, wall = per_fit(fits)
    print(f"one BLAS thread: {cpu:7.1f} ms CPU {wall:7.1f} ms wall per refit")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
