"""Small symmetric eigenproblems (``kl_basis``'s ``scipy.linalg.eigh``) on one BLAS thread vs all.

Run: ``python benchmarks/blas_threads.py [--sizes 256 512 1024] [--repeats 3]``. For each
grid size, the same matrix (a Matern-like kernel on a uniform grid, as ``kl_basis`` builds)
is decomposed alternately under ``threadpoolctl.threadpool_limits(1)`` and with the BLAS's
own thread count, side by side in one process; wall and CPU seconds (best of the repeats)
and the load average are printed. Under load, a multi-threaded OpenBLAS waits for its
threads to meet at every panel (they spin on a busy core): small eigenproblems run many
times slower than on one thread.
"""

import argparse
import os
import time

import numpy as np
import scipy.linalg
import threadpoolctl


def _matrix(m: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, m)
    d = np.abs(t[:, None] - t[None, :]) / 0.2
    return (1 + np.sqrt(3) * d) * np.exp(-np.sqrt(3) * d) / m


def _timed(a: np.ndarray, threads: int | None) -> tuple[float, float]:
    limits = threadpoolctl.threadpool_limits(threads, user_api="blas") if threads else None
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        scipy.linalg.eigh(a, check_finite=False)
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        if limits is not None:
            limits.restore_original_limits()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    info = threadpoolctl.threadpool_info()
    blas = [(i["internal_api"], i["num_threads"]) for i in info if i["user_api"] == "blas"]
    print(f"BLAS {blas}, cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    print("| m | 1 thread wall / CPU | default threads wall / CPU | ratio (wall) |")
    print("| --- | --- | --- | --- |")
    for m in args.sizes:
        a = _matrix(m)
        one, many = [], []
        for _ in range(args.repeats):
            one.append(_timed(a, 1))
            many.append(_timed(a, None))
        (w1, c1), (wn, cn) = min(one), min(many)
        print(f"| {m} | {w1:.3f} s / {c1:.3f} s | {wn:.3f} s / {cn:.3f} s | {wn / w1:.1f}x |")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
