"""Mirshani, Reimherr & Slavković (2019): Gaussian mechanisms for functional data.

* :mod:`mechanisms.mrs.mean` — the penalised-mean Gaussian mechanisms
  (registered): grid values, coefficients and linear functionals.
* :mod:`mechanisms.mrs.baselines` — finite-dimensional baselines for a mean
  release (Gaussian mechanism on basis coefficients, Bernstein mechanism).
* :mod:`mechanisms.mrs.simulation` — the simulation study of MRS Sec. 5
  (data and exact risks, not mechanisms).

The package re-exports the public names of these modules.
"""

from mechanisms.mrs import baselines, mean, simulation
from mechanisms.mrs.baselines import *  # noqa: F403
from mechanisms.mrs.mean import *  # noqa: F403
from mechanisms.mrs.simulation import *  # noqa: F403

__all__ = [
    "baselines",
    "mean",
    "simulation",
    *baselines.__all__,
    *mean.__all__,
    *simulation.__all__,
]
