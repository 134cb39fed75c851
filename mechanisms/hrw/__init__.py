"""Hall, Rinaldo & Wasserman (2013): Gaussian-process noise for functions.

* :mod:`mechanisms.hrw.release` — the shared pieces: the grid release of a
  function with Gaussian-process noise, calibration, the online exponential
  release.
* :mod:`mechanisms.hrw.kde` — private kernel density estimates (registered).
* :mod:`mechanisms.hrw.erm` — private kernel ERM: ridge, logistic, SVM
  (registered).

The package re-exports the public names of these modules.
"""

from mechanisms.hrw import erm, kde, release
from mechanisms.hrw.erm import *  # noqa: F403
from mechanisms.hrw.kde import *  # noqa: F403
from mechanisms.hrw.release import *  # noqa: F403

__all__ = [
    "erm",
    "kde",
    "release",
    *erm.__all__,
    *kde.__all__,
    *release.__all__,
]
