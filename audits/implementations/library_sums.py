"""Library bounded sums through the arithmetic sensitivity property test (issue 31).

Run ``python audits/implementations/library_sums.py`` from the repository root: each
library's *summary* (the deterministic part a noise mechanism is calibrated to) is run
by :func:`dpaudit.testing.find_sensitivity_violation` against the sensitivity the
library itself uses to calibrate its noise. Results are recorded in
``docs/implementations.md``.

* diffprivlib ``tools.sum``: ``np.sum(clip_to_bounds(ravel(x), bounds))``, noise calibrated
  to ``upper - lower``.
* diffprivlib ``tools.mean`` at a fixed size ``n = 4``: ``np.mean(clip_to_bounds(x))``,
  noise calibrated to ``(upper - lower) / n`` under replace-one; the summary refuses
  (raises on) datasets of another size, so only same-size neighbours are compared.
* OpenDP ``make_sum`` on ``f64`` with bounds and unknown size: the transformation itself,
  its claim ``map(1)`` (OpenDP's stability map, which includes a rounding allowance).
* OpenDP ``make_sum`` on ``i32``: the transformation, its claim ``map(1)``.
* python-dp ``BoundedSum`` (``float``, ``int``, ``int64``) and ``Count``: the algorithm's
  own ``quick_result`` at epsilon ``1e300``, where its noise (a multiple of a power-of-two
  granularity that scales with ``sensitivity / epsilon``) is below ``1e-280``: sums of
  magnitude ``1e-200`` or more come back as the implemented sum, bit for bit, and smaller
  ones are read as 0 (:func:`pydp_noise_free`). The claim is python-dp's add-remove
  sensitivity ``max(|lower|, |upper|)`` (``l0 = linf = 1``), 1 for ``Count``.
"""

from __future__ import annotations

import importlib.metadata
import sys

import numpy as np

from dpaudit.testing import find_sensitivity_violation

#: The float domain of the records: large values mixed with small ones.
FLOAT_BOUNDS = (0.0, 1e16)
INT_BOUNDS = (0, 2**31 - 1)


def diffprivlib_sum():
    """``(summary, claimed sensitivity, bounds, integer)`` of diffprivlib's bounded sum."""
    from diffprivlib.validation import clip_to_bounds

    def summary(records):
        return float(np.sum(clip_to_bounds(np.ravel(np.asarray(records, float)), FLOAT_BOUNDS)))

    return summary, FLOAT_BOUNDS[1] - FLOAT_BOUNDS[0], FLOAT_BOUNDS, False


#: The dataset size of the fixed-size mean check.
MEAN_SIZE = 4


def diffprivlib_mean():
    """``(summary, claimed sensitivity, bounds, integer)`` of diffprivlib's mean at size 4."""
    from diffprivlib.validation import clip_to_bounds

    def summary(records):
        if len(records) != MEAN_SIZE:
            raise ValueError(f"records has {len(records)} values; the check is at n = {MEAN_SIZE}.")
        return float(np.mean(clip_to_bounds(np.ravel(np.asarray(records, float)), FLOAT_BOUNDS)))

    return summary, (FLOAT_BOUNDS[1] - FLOAT_BOUNDS[0]) / MEAN_SIZE, FLOAT_BOUNDS, False


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def opendp_float_sum():
    """OpenDP's ``make_sum`` on bounded ``f64`` records of unknown count."""
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(bounds=FLOAT_BOUNDS))
    sum_ = dp.t.make_sum(domain, dp.symmetric_distance())
    return (lambda records: sum_([float(r) for r in records])), sum_.map(1), FLOAT_BOUNDS, False


def opendp_int32_sum():
    """OpenDP's ``make_sum`` on bounded ``i32`` records."""
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(bounds=INT_BOUNDS, T="i32"))
    sum_ = dp.t.make_sum(domain, dp.symmetric_distance())
    return (lambda records: sum_([int(r) for r in records])), sum_.map(1), INT_BOUNDS, True


#: python-dp's epsilon for the noise-free reading of its algorithms (see the module docstring).
PYDP_EPSILON = 1e300
#: Below this magnitude a python-dp result at :data:`PYDP_EPSILON` is its noise: read as 0.
PYDP_NOISE_FLOOR = 1e-200
INT64_BOUNDS = (0, 2**62)


def pydp_noise_free(algorithm, convert):
    """A python-dp algorithm's ``quick_result`` as a deterministic summary.

    Args:
        algorithm: a python-dp algorithm built at epsilon :data:`PYDP_EPSILON`.
        convert: ``float`` or ``int``, applied to each record.

    Returns:
        ``summary(records)``: the result, with magnitudes below :data:`PYDP_NOISE_FLOOR`
        (the noise alone: the records are ``>= 0``) read as 0.
    """

    def summary(records):
        value = algorithm.quick_result([convert(r) for r in records])
        return value if abs(value) >= PYDP_NOISE_FLOOR else type(value)(0)

    return summary


def pydp_sum(dtype: str):
    """python-dp's ``BoundedSum`` on ``dtype`` records (``float``, ``int`` or ``int64``)."""
    import pydp.algorithms.laplacian as laplacian

    bounds = {"float": FLOAT_BOUNDS, "int": INT_BOUNDS, "int64": INT64_BOUNDS}[dtype]
    algorithm = laplacian.BoundedSum(
        epsilon=PYDP_EPSILON, lower_bound=bounds[0], upper_bound=bounds[1], dtype=dtype
    )
    convert = float if dtype == "float" else int
    claimed = max(abs(bounds[0]), abs(bounds[1]))
    return pydp_noise_free(algorithm, convert), claimed, bounds, dtype != "float"


def pydp_count():
    """python-dp's ``Count`` (integer records; sensitivity 1)."""
    import pydp.algorithms.laplacian as laplacian

    algorithm = laplacian.Count(epsilon=PYDP_EPSILON)
    return pydp_noise_free(algorithm, int), 1, INT_BOUNDS, True


CHECKS = {
    "diffprivlib tools.sum": ("diffprivlib", diffprivlib_sum),
    "diffprivlib tools.mean n=4 (replace-one)": ("diffprivlib", diffprivlib_mean),
    "OpenDP make_sum f64": ("opendp", opendp_float_sum),
    "OpenDP make_sum i32": ("opendp", opendp_int32_sum),
    "python-dp BoundedSum float": ("python-dp", lambda: pydp_sum("float")),
    "python-dp BoundedSum int": ("python-dp", lambda: pydp_sum("int")),
    "python-dp BoundedSum int64": ("python-dp", lambda: pydp_sum("int64")),
    "python-dp Count": ("python-dp", pydp_count),
}


def run(name: str, max_examples: int = 2000):
    """The counterexample (or ``None``) and the library version of one check."""
    package, build = CHECKS[name]
    summary, claimed, bounds, integer = build()
    adjacency = "replace-one" if "replace-one" in name else "add-remove"
    # the fixed-size mean is defined at MEAN_SIZE records only: every example at that size
    sizes = {"min_records": MEAN_SIZE, "max_records": MEAN_SIZE} if "n=" in name else {}
    found = find_sensitivity_violation(
        summary,
        claimed,
        bounds,
        integer=integer,
        adjacency=adjacency,
        max_examples=max_examples,
        **sizes,
    )
    return found, importlib.metadata.version(package)


def main() -> int:
    for name in CHECKS:
        try:
            found, version = run(name)
        except ImportError as err:
            print(f"{name}: skipped ({err})")
            continue
        verdict = "no violation" if found is None else f"VIOLATION: {found}"
        print(f"{name} ({CHECKS[name][0]} {version}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
