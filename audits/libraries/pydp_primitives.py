"""Black-box audits of python-dp primitives (Google's differential privacy library, 1.1.5).

python-dp's mechanisms and algorithms draw from the C++ library's own secure generator,
which cannot be seeded: each is audited as an unseeded per-call sampler ``f(data)``
(wrapped by :func:`dpaudit.blackbox.per_call`; the results say the run is not
reproducible). Every correct use is expected ``inconclusive`` (its audit strength is
shown), every misuse ``violation``:

* ``laplace`` — ``LaplaceMechanism(epsilon=1, sensitivity=1).add_noise(x)`` on query
  answers 0 and 1, claim epsilon 1;
* ``laplace-fine-input`` — the same on answers 0 and ``2^-45``: a precision attack
  (Haney et al. 2022) would tell them apart by the releases' low bits; python-dp
  rounds the answer to its noise granularity (a power of two, ``2^-40`` here) first,
  so both have one law;
* ``gaussian`` — ``GaussianMechanism(epsilon=1, delta=1e-5, sensitivity=1)``, claim
  (1, 1e-5);
* ``count`` — ``Count(epsilon=1)`` on 4 records against 3 (add-remove), claim 1;
* ``bounded-sum`` — ``BoundedSum(epsilon=1, lower_bound=0, upper_bound=1, dtype="float")``
  on 5 records in [0, 1] against the 4 without the record 1.0 (add-remove), claim 1;
* ``bounded-mean`` — ``BoundedMean(epsilon=1, lower_bound=0, upper_bound=1)`` on the same
  pair, claim 1;
* misuses: ``laplace-sensitivity-2`` (answers 0 and 2 at sensitivity 1: true epsilon 2),
  ``count-claimed-half`` (``Count(epsilon=1)`` claimed at epsilon 0.5);
* precision (statistic ``"bits"``): ``laplace-precision`` (the Laplace audit read by its
  releases' bits: ``inconclusive``, its releases of 0 and 1 share the ``2^-40`` lattice)
  and ``gaussian-precision`` (the Gaussian audit read by its bits: ``violation``). The
  Gaussian's releases are not rounded to a lattice coarser than a double's spacing: a
  release of answer 0 in ``(1/4, 1/2)`` can be an odd multiple of ``2^-54``, one of answer
  1 (``1 + z`` with ``z`` in ``(-3/4, -1/2)``, a multiple of ``2^-53``) cannot, so about
  5 % of the releases of 0 are impossible from 1: the precision attack of Haney et al.

``run(audit, statistic=...)`` audits with any of the engine's statistics: the default
``"auto"``, ``"float"`` (reachability by numpy's Laplace arithmetic: python-dp's samplers
are not numpy's, so it finds no fit and says so with a ``ValueError``) or ``"bits"``
(the MLP on the releases' bit-level features). What each found is recorded in
``docs/implementations.md``.

Run ``python audits/libraries/pydp_primitives.py [--samples N] [--statistic S] [-k NAME]``
(needs the ``libraries`` extra: ``pip install -e ".[libraries]"``); exit code 1 if a
verdict differs from its expectation.
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import dpaudit
from dpaudit.adapters import find_named, library_arguments
from dpaudit.blackbox import blackbox_audit, per_call

# A mechanism call costs a few microseconds and an algorithm's quick_result ~10: 50 000
# certification + 10 000 selection releases per dataset keep an audit at a few seconds
# with the default statistic ("bits" trains an MLP on the selection releases: ~20 s).
_SAMPLES = 50_000
_SELECT = 10_000
# The (epsilon, delta) Gaussian: the default objective weighs the best epsilon event
# against the best delta event, as for diffprivlib's Gaussians.
_APPROX_SAMPLES = 100_000
_APPROX_SELECT = 50_000


class LibraryAudit(NamedTuple):
    """One audit: the primitive, the neighbouring inputs, the claim, the expected verdict."""

    name: str
    build: Callable
    inputs: tuple
    claim: tuple
    expected: str
    samples: int = _SAMPLES
    select_samples: int = _SELECT
    statistic: str = "auto"


def _pydp():
    """python-dp, imported on first use (the module loads without the extra)."""
    try:
        import pydp.algorithms.laplacian as laplacian
        from pydp.algorithms import numerical_mechanisms
    except ImportError as err:
        raise ImportError(
            f"the python-dp audits need python-dp 1.1.5 ({err}); install the extra: "
            'pip install -e ".[libraries]".'
        ) from None
    return laplacian, numerical_mechanisms


def laplace(epsilon: float = 1.0, sensitivity: float = 1.0):
    """``LaplaceMechanism.add_noise`` on a scalar answer."""
    mech = _pydp()[1].LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
    return lambda answer: mech.add_noise(float(answer))


def gaussian(epsilon: float = 1.0, delta: float = 1e-5, sensitivity: float = 1.0):
    """``GaussianMechanism.add_noise`` on a scalar answer."""
    mech = _pydp()[1].GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    return lambda answer: mech.add_noise(float(answer))


def count(epsilon: float = 1.0):
    """``Count.quick_result`` on the records."""
    algorithm = _pydp()[0].Count(epsilon=epsilon)
    return lambda data: algorithm.quick_result([int(x) for x in np.ravel(data)])


def bounded(kind: str, epsilon: float = 1.0, lower: float = 0.0, upper: float = 1.0):
    """``BoundedSum`` or ``BoundedMean`` (``kind``) on float records, bounds given."""
    cls = getattr(_pydp()[0], kind)
    algorithm = cls(epsilon=epsilon, lower_bound=lower, upper_bound=upper, dtype="float")
    return lambda data: algorithm.quick_result([float(x) for x in np.ravel(data)])


_RECORDS = np.array([0.2, 0.9, 0.5, 0.4, 1.0])  # add-remove: the last record removed

AUDITS = [
    LibraryAudit("laplace", laplace, (0.0, 1.0), (1.0, 0.0), "inconclusive"),
    LibraryAudit("laplace-fine-input", laplace, (0.0, 2.0**-45), (1.0, 0.0), "inconclusive"),
    LibraryAudit(
        "gaussian",
        gaussian,
        (0.0, 1.0),
        (1.0, 1e-5),
        "inconclusive",
        _APPROX_SAMPLES,
        _APPROX_SELECT,
    ),
    LibraryAudit(
        "count", count, (np.ones(4), np.ones(3)), (1.0, 0.0, "add-remove"), "inconclusive"
    ),
    LibraryAudit(
        "bounded-sum",
        lambda: bounded("BoundedSum"),
        (_RECORDS, _RECORDS[:-1]),
        (1.0, 0.0, "add-remove"),
        "inconclusive",
    ),
    LibraryAudit(
        "bounded-mean",
        lambda: bounded("BoundedMean"),
        (_RECORDS, _RECORDS[:-1]),
        (1.0, 0.0, "add-remove"),
        "inconclusive",
    ),
    LibraryAudit("laplace-sensitivity-2", laplace, (0.0, 2.0), (1.0, 0.0), "violation"),
    LibraryAudit(
        "count-claimed-half", count, (np.ones(4), np.ones(3)), (0.5, 0.0, "add-remove"), "violation"
    ),
    LibraryAudit(
        "laplace-precision", laplace, (0.0, 1.0), (1.0, 0.0), "inconclusive", statistic="bits"
    ),
    LibraryAudit(
        "gaussian-precision",
        gaussian,
        (0.0, 1.0),
        (1.0, 1e-5),
        "violation",
        _APPROX_SAMPLES,
        _APPROX_SELECT,
        statistic="bits",
    ),
]


#: The audit called ``name`` (:func:`dpaudit.adapters.find_named` on :data:`AUDITS`): a
#: ValueError for an unknown name.
audit_named = functools.partial(find_named, AUDITS, library="python-dp")


def version() -> str:
    """The installed python-dp version (``importlib.metadata``)."""
    return importlib.metadata.version("python-dp")


def run(
    audit: LibraryAudit,
    samples: int | None = None,
    seed: int = 0,
    select_samples: int | None = None,
    statistic: str | None = None,
):
    """Audit one python-dp primitive as an unseeded per-call sampler.

    Args:
        audit: the :class:`LibraryAudit`.
        samples: certification releases per dataset (default the audit's budget).
        seed: the audit's seed (selection and tie draws; python-dp has its own randomness).
        select_samples: selection releases per dataset (default the audit's).
        statistic: the engine's statistic (``"auto"``, ``"float"``, ``"bits"``, ...); default
            the audit's own.

    Returns:
        The :class:`~dpaudit.BlackBoxResult`.
    """
    release = audit.build()

    def primitive(data):  # one call, one release (python-dp's own randomness)
        return release(data)

    epsilon, delta, *adjacency = audit.claim
    claim = dpaudit.Claim(epsilon, delta, adjacency=adjacency[0] if adjacency else "replace-one")
    d, d1 = audit.inputs
    return blackbox_audit(
        per_call(primitive, name=f"python-dp/{audit.name}"),
        np.asarray(d),
        np.asarray(d1),
        claim,
        statistic=audit.statistic if statistic is None else statistic,
        samples=audit.samples if samples is None else samples,
        select_samples=audit.select_samples if select_samples is None else select_samples,
        seed=seed,
        progress=False,
    )


def main(argv=None) -> int:
    """Run the audits and print one line each.

    Args:
        argv: the command line (default ``sys.argv[1:]``).

    Returns:
        The exit code: 1 if a verdict differs from its expectation.
    """
    parser = library_arguments(__doc__.splitlines()[0], write_specs=False)
    parser.add_argument(
        "--statistic", default=None, help="default: each audit's own; another drops the expectation"
    )
    args = parser.parse_args(argv)
    audits = [audit_named(n) for n in args.names] if args.names else AUDITS
    chosen = args.statistic or "each audit's own"
    print(f"python-dp {version()}, statistic: {chosen}")
    failures = 0
    for audit in audits:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            res = run(audit, args.samples, args.seed, statistic=args.statistic)
        except ValueError as err:  # e.g. statistic="float" finds no numpy-Laplace fit
            print(f"--  {audit.name:24s} refused: {err}", flush=True)
            continue
        ok = res.verdict == audit.expected
        expected = args.statistic in (None, audit.statistic)
        failures += expected and not ok
        print(
            f"{('ok ' if ok else 'BAD') if expected else '-- '} {audit.name:24s} {res.verdict:12s} eps >= "
            f"{res.epsilon_lower:.3f} (claim {audit.claim[0]:.3g}, {audit.claim[1]:g}); "
            f"statistic {res.event.statistic}; strength eps >= "
            f"{res.strength.get('epsilon', math.inf):.3g}; {time.perf_counter() - t0:.1f} s "
            f"(CPU {time.process_time() - c0:.1f} s)",
            flush=True,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
