"""Black-box audits of OpenDP primitives at their documented claims, and of common misuses.

OpenDP's measurements take one input and return one release, with their own
(unseedable) randomness: each is audited as a per-call sampler ``f(data)``
(wrapped by :func:`dpaudit.blackbox.per_call`; the results say the run is not
reproducible). The neighbouring inputs are the query answers on neighbouring
datasets (a scalar of sensitivity 1, or 2 for the misuse that states 1).

Every correct primitive is expected ``inconclusive`` (with its stated audit
strength), every misuse ``violation``:

* ``laplace`` — ``make_laplace(scale=1/eps)``, claim eps = 1;
* ``discrete-laplace`` — ``make_laplace`` on integers (the geometric mechanism);
* ``gaussian`` — ``make_gaussian(scale=1)`` (rho = 1/2 zCDP), claimed at the
  (eps, delta) of the standard conversion eps = rho + 2 sqrt(rho log(1/delta));
* ``randomized-response`` — ``make_randomized_response_bool(prob=0.75)``, eps = log 3;
* misuses: ``laplace-sensitivity-2`` (scale 1/eps for a sensitivity-2 query),
  ``laplace-epsilon-as-scale`` (scale = eps = 0.5), ``gaussian-rho-as-epsilon``
  (rho = 1/2 read as eps = 1/2 at delta 1e-6), ``randomized-response-wrong-epsilon``
  (prob 0.75 claimed at eps = 0.5).

Run ``python audits/libraries/opendp_primitives.py [--samples N]`` (needs the
``libraries`` extra: ``pip install -e ".[libraries]"``); exit code 1 if a verdict
differs from its expectation.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NamedTuple

import dpaudit
from dpaudit.blackbox import blackbox_audit


class LibraryAudit(NamedTuple):
    """One audit: the primitive's builder, the neighbouring inputs, the claim, the verdict."""

    name: str
    build: object
    inputs: tuple
    claim: tuple
    expected: str


def _dp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def laplace(scale: float):
    dp = _dp()
    return dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def discrete_laplace(scale: float):
    dp = _dp()
    return dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)


def gaussian(scale: float):
    dp = _dp()
    return dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def randomized_response(prob: float):
    return _dp().m.make_randomized_response_bool(prob=prob)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The standard conversion rho-zCDP -> (rho + 2 sqrt(rho log(1/delta)), delta)-DP."""
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


AUDITS = [
    LibraryAudit("laplace", lambda: laplace(1.0), (0.0, 1.0), (1.0, 0.0), "inconclusive"),
    LibraryAudit(
        "discrete-laplace", lambda: discrete_laplace(1.0), (0, 1), (1.0, 0.0), "inconclusive"
    ),
    LibraryAudit(
        "gaussian",
        lambda: gaussian(1.0),
        (0.0, 1.0),
        (zcdp_epsilon(0.5, 1e-6), 1e-6),
        "inconclusive",
    ),
    LibraryAudit(
        "randomized-response",
        lambda: randomized_response(0.75),
        (False, True),
        (math.log(3), 0.0),
        "inconclusive",
    ),
    LibraryAudit(
        "laplace-sensitivity-2", lambda: laplace(1.0), (0.0, 2.0), (1.0, 0.0), "violation"
    ),
    LibraryAudit(
        "laplace-epsilon-as-scale", lambda: laplace(0.5), (0.0, 1.0), (0.5, 0.0), "violation"
    ),
    LibraryAudit(
        "gaussian-rho-as-epsilon", lambda: gaussian(1.0), (0.0, 1.0), (0.5, 1e-6), "violation"
    ),
    LibraryAudit(
        "randomized-response-wrong-epsilon",
        lambda: randomized_response(0.75),
        (False, True),
        (0.5, 0.0),
        "violation",
    ),
]


def run(
    audit: LibraryAudit,
    samples: int,
    seed: int = 0,
    select_samples: int | None = None,
    statistic: str = "auto",
):
    """Audit one primitive as an unseeded per-call sampler.

    Args:
        audit: the :class:`LibraryAudit`.
        samples: certification releases per dataset.
        seed: the audit's seed (selection and tie draws; the primitive has its own randomness).
        select_samples: selection releases per dataset (default the audit's).
        statistic: the engine's statistic (``"auto"``, ``"float"``, ``"bits"``, ...).

    Returns:
        The :class:`~dpaudit.BlackBoxResult`.
    """
    measurement = audit.build()

    def primitive(data):  # one call, one release (OpenDP's own randomness)
        return measurement(data)

    primitive.__name__ = f"opendp/{audit.name}"
    d, d1 = audit.inputs
    return blackbox_audit(
        primitive,
        d,
        d1,
        dpaudit.Claim(*audit.claim),
        statistic=statistic,
        samples=samples,
        select_samples=select_samples,
        seed=seed,
        progress=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200_000)
    args = parser.parse_args()
    failures = 0
    for audit in AUDITS:
        res = run(audit, args.samples)
        ok = res.verdict == audit.expected
        failures += not ok
        print(
            f"{'ok ' if ok else 'BAD'} {audit.name:36s} {res.verdict:12s} eps >= "
            f"{res.epsilon_lower:.3f} (claim {audit.claim[0]:.3g}, {audit.claim[1]:g}); "
            f"strength: eps >= {res.detectable_epsilon:.3g} would have been certified"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
