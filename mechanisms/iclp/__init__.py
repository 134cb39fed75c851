"""Lin & Reimherr (2024): ICLP mechanisms for functional data, their baselines and experiments.

* :mod:`mechanisms.iclp.mean` — the ICLP-QR, ICLP-AR and FRL mean releases
  (registered), their summaries, sensitivities and privacy-safe tuning.
* :mod:`mechanisms.iclp.beyond` — ICLP beyond the mean: KDE, kernel ridge
  regression, covariance and function-on-scalar regression (registered).
* :mod:`mechanisms.iclp.cross_validation` — private cross-validation of the
  tuning parameter (an experiment tool; reads the data).
* :mod:`mechanisms.iclp.simulations` — the data-generating settings of LR's
  experiments (data, not mechanisms).

The package re-exports the public names of these modules.
"""

from mechanisms.iclp import beyond, cross_validation, mean, simulations
from mechanisms.iclp.beyond import *  # noqa: F403
from mechanisms.iclp.cross_validation import *  # noqa: F403
from mechanisms.iclp.mean import *  # noqa: F403
from mechanisms.iclp.simulations import *  # noqa: F403

__all__ = [
    "beyond",
    "cross_validation",
    "mean",
    "simulations",
    *beyond.__all__,
    *cross_validation.__all__,
    *mean.__all__,
    *simulations.__all__,
]
