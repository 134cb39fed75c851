"""Hall, Rinaldo & Wasserman (2013): Gaussian-process noise for functions.

* :mod:`mechanisms.hrw.release` — the shared pieces: the grid release of a
  function with Gaussian-process noise, calibration, the online exponential
  release.
* :mod:`mechanisms.hrw.kde` — private kernel density estimates (registered).
* :mod:`mechanisms.hrw.erm` — private kernel ERM: ridge, logistic, SVM
  (registered).
* :mod:`mechanisms.hrw.online` — the online release for a general kernel
  (Schur-complement recursion; registered with a faulty variant).
* :mod:`mechanisms.hrw.bandwidth` — a KDE whose bandwidth comes from a private
  scale (two release sites, composed budget; registered with a faulty variant).

The package re-exports the public names of these modules.
"""

from mechanisms.hrw import bandwidth, erm, kde, online, release
from mechanisms.hrw.bandwidth import *  # noqa: F403
from mechanisms.hrw.erm import *  # noqa: F403
from mechanisms.hrw.kde import *  # noqa: F403
from mechanisms.hrw.online import *  # noqa: F403
from mechanisms.hrw.release import *  # noqa: F403

__all__ = [
    "bandwidth",
    "erm",
    "kde",
    "online",
    "release",
    *bandwidth.__all__,
    *erm.__all__,
    *kde.__all__,
    *online.__all__,
    *release.__all__,
]
