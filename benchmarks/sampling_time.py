"""Time to draw 100 sample paths of the ICLP and of a Gaussian process (Lin & Reimherr, Table 1).

For each kernel (exponential, Gaussian, Matérn 3/2, Matérn 5/2; lengthscale 0.1) and
grid size ``m`` this script measures, side by side in one process:

* ``ICLP`` and ``GP``: dpaudit's definition of both noises, through the Karhunen–Loève
  basis: ``uniform_grid(m)`` -> ``kl_basis`` (kernel matrix + scipy ``eigh``) ->
  ``ICLPNoise`` / ``GaussianProcessNoise`` -> ``GridNoise(...).sample(key, (100,))``.
* ``GP-Chol``: a reference Gaussian process drawn the textbook way, without dpaudit's
  noise classes: kernel matrix + jitter ``1e-10 * max diag``, scipy Cholesky ``L``,
  then ``L @ N(0, I)`` draws.

Three timings per configuration:

* warm total: grid + basis (or Cholesky) + distribution + 100 paths, with every JAX
  operation already compiled (one untimed warm-up round first); median of ``--repeats``
  interleaved repeats whose method order rotates from repeat to repeat.
* cold total: the same pipeline once in a fresh Python process (imports and JAX backend
  start-up excluded, every XLA compilation included): what a user's first call costs.
* +100 paths: one more batch of 100 paths from an already-built basis with a warm
  ``jax.jit`` sampler; median of ``--batch-repeats`` interleaved calls.

Run ``python benchmarks/sampling_time.py`` (``make bench``); ``--sizes 100 200
--repeats 2 --no-cold`` gives a quick run. The report is Markdown on stdout, progress on
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy
import scipy.linalg

import dpaudit
from dpaudit.model.noise import GaussianProcessNoise, GridNoise, ICLPNoise
from dpaudit.model.spaces import Exponential, Gaussian, Matern, kl_basis, uniform_grid

N_PATHS = 100
LENGTHSCALE = 0.1
CHOLESKY_JITTER = 1e-10
KERNELS = {
    "exponential": Exponential(lengthscale=LENGTHSCALE),
    "Gaussian": Gaussian(lengthscale=LENGTHSCALE),
    "Matérn 3/2": Matern(nu=1.5, lengthscale=LENGTHSCALE),
    "Matérn 5/2": Matern(nu=2.5, lengthscale=LENGTHSCALE),
}
KERNEL_KEYS = {"exponential": "exp", "Gaussian": "gauss", "Matérn 3/2": "m32", "Matérn 5/2": "m52"}
METHODS = ("ICLP", "GP", "GP-Chol")
NOISES = {"ICLP": ICLPNoise, "GP": GaussianProcessNoise}
# Lin & Reimherr, Table 1: seconds for 100 paths at m = 100, 200, 500.
PAPER = {"ICLP": {100: 0.57, 200: 2.7, 500: 30.0}, "GP": {100: 0.27, 200: 1.6, 500: 20.9}}
MAX_REPEATS = 1000
GOAL_RATIO = 1.1
GOAL_M = 500
GOAL_SECONDS = 0.5


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- pipelines


def kl_total(kernel, m: int, method: str, key) -> dict:
    """Grid -> KL basis -> noise -> 100 paths on the grid, timed end to end."""
    t0 = time.perf_counter()
    grid = uniform_grid(m)
    basis = kl_basis(kernel, grid)
    basis.eigenfunctions.block_until_ready()
    t1 = time.perf_counter()
    noise = NOISES[method](basis.eigenvalues, sigma=1.0)
    paths = GridNoise(noise, basis).sample(key, (N_PATHS,))
    paths.block_until_ready()
    t2 = time.perf_counter()
    assert paths.shape == (N_PATHS, m)
    return {"total": t2 - t0, "setup": t1 - t0, "draw": t2 - t1, "K": basis.n_components}


def cholesky_factor(kernel, grid):
    gram = np.array(kernel(grid.points, grid.points), dtype=np.float64)
    gram[np.diag_indices_from(gram)] += CHOLESKY_JITTER * np.max(np.diag(gram))
    return jnp.asarray(scipy.linalg.cholesky(gram, lower=True, check_finite=False))


def cholesky_total(kernel, m: int, key) -> dict:
    """Grid -> kernel matrix + jitter -> Cholesky -> ``L @ N(0, I)``, timed end to end."""
    t0 = time.perf_counter()
    grid = uniform_grid(m)
    try:
        factor = cholesky_factor(kernel, grid)
    except np.linalg.LinAlgError:
        return {"total": float("nan"), "setup": float("nan"), "draw": float("nan"), "K": m}
    factor.block_until_ready()
    t1 = time.perf_counter()
    paths = (factor @ jax.random.normal(key, (m, N_PATHS))).T
    paths.block_until_ready()
    t2 = time.perf_counter()
    assert paths.shape == (N_PATHS, m)
    return {"total": t2 - t0, "setup": t1 - t0, "draw": t2 - t1, "K": m}


def run_total(kernel, m: int, method: str, key) -> dict:
    if method == "GP-Chol":
        return cholesky_total(kernel, m, key)
    return kl_total(kernel, m, method, key)


@jax.jit
def _sample_grid_noise(key, noise):
    return noise.sample(key, (N_PATHS,))


@jax.jit
def _sample_cholesky(key, factor):
    return (factor @ jax.random.normal(key, (factor.shape[0], N_PATHS))).T


# --------------------------------------------------------------------------- measurements


def enough(r: int, repeats: int, spent: float, min_time: float) -> bool:
    """Stop after ``repeats`` runs once ``min_time`` seconds are spent (or at MAX_REPEATS)."""
    return r >= MAX_REPEATS or (r >= repeats and spent >= min_time)


def warm_totals(kernel, m: int, repeats: int, min_time: float, seed: int) -> dict:
    """Median warm end-to-end time per method, interleaved with rotating order."""
    key = jax.random.key(seed)
    for method in METHODS:  # untimed warm-up: compile every op for this (kernel, m)
        run_total(kernel, m, method, key)
    runs = {method: [] for method in METHODS}
    r = 0
    while not enough(
        r, repeats, min(sum(x["total"] for x in rs) for rs in runs.values()), min_time
    ):
        order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
        for method in order:
            runs[method].append(run_total(kernel, m, method, jax.random.fold_in(key, r)))
        r += 1
    out = {}
    for method, rs in runs.items():
        out[method] = {
            field: statistics.median(x[field] for x in rs) for field in ("total", "setup", "draw")
        }
        out[method]["K"] = rs[0]["K"]
        out[method]["repeats"] = len(rs)
    return out


def batch_times(kernel, m: int, repeats: int, min_time: float, seed: int) -> dict:
    """Median time of one more jitted 100-path draw from an already built basis."""
    grid = uniform_grid(m)
    basis = kl_basis(kernel, grid)
    samplers = {
        method: (_sample_grid_noise, GridNoise(NOISES[method](basis.eigenvalues, 1.0), basis))
        for method in NOISES
    }
    try:
        samplers["GP-Chol"] = (_sample_cholesky, cholesky_factor(kernel, grid))
    except np.linalg.LinAlgError:
        pass
    keys = list(jax.random.split(jax.random.key(seed), MAX_REPEATS + 1))
    for fn, arg in samplers.values():  # compile
        fn(keys[-1], arg).block_until_ready()
    names = list(samplers)
    runs = {method: [] for method in names}
    r = 0
    while not enough(r, repeats, min(sum(ts) for ts in runs.values()), min_time):
        order = names[r % len(names) :] + names[: r % len(names)]
        for method in order:
            fn, arg = samplers[method]
            t0 = time.perf_counter()
            fn(keys[r], arg).block_until_ready()
            runs[method].append(time.perf_counter() - t0)
        r += 1
    out = {method: float("nan") for method in METHODS}
    out.update({method: statistics.median(ts) for method, ts in runs.items()})
    return out


def cold_total(kernel_name: str, m: int, method: str, seed: int) -> float:
    """End-to-end time of the first call in a fresh Python process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--cold-child", kernel_name, str(m), method]
    cmd += ["--seed", str(seed)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["total"])


def cold_totals(kernel_name: str, m: int, repeats: int, seed: int) -> dict:
    """Median first-call time over ``repeats`` fresh processes per method, interleaved."""
    runs = {method: [] for method in METHODS}
    for r in range(repeats):
        order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
        for method in order:
            runs[method].append(cold_total(kernel_name, m, method, seed + r))
    return {method: statistics.median(ts) for method, ts in runs.items()}


def cold_child(kernel_name: str, m: int, method: str, seed: int) -> None:
    jax.devices()  # start the backend outside the timed region
    result = run_total(KERNELS[kernel_name], m, method, jax.random.key(seed))
    print(json.dumps({"total": result["total"], "K": result["K"]}))


# --------------------------------------------------------------------------- report


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        blas = scipy.show_config(mode="dicts")["Build Dependencies"]["lapack"]
        lapack = f"{blas.get('name')} {blas.get('version')}"
    except Exception:
        lapack = "unknown"
    threads = {
        k: os.environ[k]
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")
        if k in os.environ
    }
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": ", ".join(str(d) for d in jax.devices()),
        "x64": bool(jax.config.jax_enable_x64),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scipy_lapack": lapack,
        "dpaudit": dpaudit.__version__,
        "thread_env": threads or "none set",
        "loadavg_start": os.getloadavg(),
    }


def fmt(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "fails"
    if seconds >= 10:
        return f"{seconds:.1f}"
    if seconds >= 1:
        return f"{seconds:.2f}"
    if seconds >= 0.01:
        return f"{seconds:.3f}"
    return f"{seconds * 1000:.2f} ms"


def ratio(a: float, b: float) -> str:
    return "–" if not (a == a and b == b) or b == 0 else f"{a / b:.2f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def report(info: dict, results: list[dict], args) -> str:
    out = ["## Machine", ""]
    out += [f"- {k}: {v}" for k, v in info.items()]
    out += [
        "",
        f"Settings: sizes {args.sizes}, {N_PATHS} paths, lengthscale {LENGTHSCALE}, "
        f"warm totals: median of >= {args.repeats} repeats ({args.large_repeats} at m >= 2000) "
        f"and >= {args.min_time} s per method; +100 paths: median of >= {args.batch_repeats} "
        f"repeats and >= {args.min_time} s; cold: "
        + (f"median of {args.cold_repeats} fresh processes" if args.cold else "skipped")
        + ".",
        "",
    ]
    has_cold = args.cold

    out += ["## Total time for 100 paths (seconds unless marked ms)", ""]
    header = ["m", "kernel", "K", "ICLP warm", "GP warm", "ICLP/GP warm", "GP-Chol warm"]
    if has_cold:
        header += ["ICLP cold", "GP cold", "ICLP/GP cold", "GP-Chol cold"]
    rows = []
    for r in results:
        w, c = r["warm"], r.get("cold", {})
        row = [str(r["m"]), r["kernel"], str(w["ICLP"]["K"])]
        row += [fmt(w["ICLP"]["total"]), fmt(w["GP"]["total"])]
        row += [ratio(w["ICLP"]["total"], w["GP"]["total"]), fmt(w["GP-Chol"]["total"])]
        if has_cold:
            row += [fmt(c["ICLP"]), fmt(c["GP"]), ratio(c["ICLP"], c["GP"]), fmt(c["GP-Chol"])]
        rows.append(row)
    out += [table(header, rows), ""]

    out += ["## Where the warm time goes, and one more batch of 100 paths", ""]
    header = ["m", "kernel", "K", "KL basis (grid+kernel+eigh)", "ICLP draw", "GP draw"]
    header += ["Cholesky setup", "ICLP +100", "GP +100", "ICLP/GP +100", "GP-Chol +100"]
    rows = []
    for r in results:
        w, b = r["warm"], r["batch"]
        setup = statistics.median([w["ICLP"]["setup"], w["GP"]["setup"]])
        row = [str(r["m"]), r["kernel"], str(w["ICLP"]["K"]), fmt(setup)]
        row += [fmt(w["ICLP"]["draw"]), fmt(w["GP"]["draw"]), fmt(w["GP-Chol"]["setup"])]
        row += [fmt(b["ICLP"]), fmt(b["GP"]), ratio(b["ICLP"], b["GP"]), fmt(b["GP-Chol"])]
        rows.append(row)
    out += [table(header, rows), ""]

    sizes = sorted({r["m"] for r in results})
    out += ["## Against the paper (mean over the four kernels)", ""]
    header = ["m", "paper ICLP", "paper GP", "paper ratio", "ICLP warm", "GP warm", "ratio"]
    if has_cold:
        header += ["ICLP cold", "GP cold", "ratio cold"]
    rows = []
    for m in sizes:
        rs = [r for r in results if r["m"] == m]
        wi = statistics.mean(r["warm"]["ICLP"]["total"] for r in rs)
        wg = statistics.mean(r["warm"]["GP"]["total"] for r in rs)
        pi, pg = PAPER["ICLP"].get(m, float("nan")), PAPER["GP"].get(m, float("nan"))
        row = [str(m), fmt(pi) if pi == pi else "–", fmt(pg) if pg == pg else "–"]
        row += [ratio(pi, pg), fmt(wi), fmt(wg), ratio(wi, wg)]
        if has_cold:
            ci = statistics.mean(r["cold"]["ICLP"] for r in rs)
            cg = statistics.mean(r["cold"]["GP"] for r in rs)
            row += [fmt(ci), fmt(cg), ratio(ci, cg)]
        rows.append(row)
    out += [table(header, rows), ""]

    out += ["## Goals", ""]

    def worst(values):
        values = [v for v in values if v == v]
        return max(values) if values else float("nan")

    checks = [
        ("warm total", [r["warm"]["ICLP"]["total"] / r["warm"]["GP"]["total"] for r in results])
    ]
    if has_cold:
        checks.append(("cold total", [r["cold"]["ICLP"] / r["cold"]["GP"] for r in results]))
    checks.append(("+100 paths", [r["batch"]["ICLP"] / r["batch"]["GP"] for r in results]))
    for name, ratios in checks:
        w = worst(ratios)
        verdict = "met" if w <= GOAL_RATIO else "NOT met"
        out.append(
            f"- ICLP <= {GOAL_RATIO}x GP, {name}: worst ratio {w:.2f} "
            f"(median {statistics.median(ratios):.2f}) -> {verdict}"
        )
    at_goal = [r for r in results if r["m"] == GOAL_M]
    if at_goal:
        kinds = [("warm", lambda r: r["warm"]["ICLP"]["total"])]
        if has_cold:
            kinds.append(("cold", lambda r: r["cold"]["ICLP"]))
        for name, get in kinds:
            w = worst(get(r) for r in at_goal)
            verdict = "met" if w < GOAL_SECONDS else "NOT met"
            out.append(
                f"- ICLP at m = {GOAL_M} under {GOAL_SECONDS} s including setup, {name}: "
                f"worst kernel {fmt(w)} s on {info['usable_cpus']} CPU(s) -> {verdict}"
            )
    else:
        out.append(f"- m = {GOAL_M} not in --sizes; time goal not checked.")
    out.append(f"- load average at start {info['loadavg_start']}, at end {os.getloadavg()}")
    return "\n".join(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000, 2000])
    parser.add_argument("--repeats", type=int, default=5, help="warm end-to-end repeats")
    parser.add_argument(
        "--large-repeats", type=int, default=3, help="warm repeats for m >= 2000 (eigh is slow)"
    )
    parser.add_argument("--batch-repeats", type=int, default=50, help="+100-path repeats")
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.5,
        help=f"repeat until each method ran this many seconds (at most {MAX_REPEATS} repeats)",
    )
    parser.add_argument("--cold-repeats", type=int, default=3, help="fresh processes per cell")
    parser.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the first call in a fresh process per cell (default: on)",
    )
    parser.add_argument("--kernels", nargs="+", choices=list(KERNEL_KEYS.values()))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the raw timings to this file")
    parser.add_argument("--cold-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.cold_child:
        name, m, method = args.cold_child
        cold_child(name, int(m), method, args.seed)
        return
    if min(args.repeats, args.batch_repeats, args.large_repeats, args.cold_repeats) < 1:
        parser.error("repeats must be >= 1")

    info = machine_info()
    kernels = [n for n, k in KERNEL_KEYS.items() if args.kernels is None or k in args.kernels]
    results = []
    for m in args.sizes:
        for name in kernels:
            kernel = KERNELS[name]
            repeats = args.repeats if m < 2000 else min(args.repeats, args.large_repeats)
            log(f"m={m} {name}: warm totals ({repeats} repeats)")
            warm = warm_totals(kernel, m, repeats, args.min_time, args.seed)
            row = {"m": m, "kernel": name, "warm": warm}
            log(f"m={m} {name}: +100 paths (>= {args.batch_repeats} repeats)")
            row["batch"] = batch_times(kernel, m, args.batch_repeats, args.min_time, args.seed)
            if args.cold:
                log(f"m={m} {name}: cold first calls ({args.cold_repeats} fresh processes each)")
                row["cold"] = cold_totals(name, m, args.cold_repeats, args.seed)
            results.append(row)
    print(report(info, results, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
