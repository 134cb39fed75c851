"""The resolution to which every test statistic is rounded before thresholding.

Releases computed in floating point are not exactly the mathematical
mechanism: ``0 + Z`` and ``1 + Z`` land on different sets of doubles, and an
event built from the low-order bits of the release separates them perfectly
(Mironov, CCS 2012). Rounding statistics to multiples of
:data:`STATISTIC_RESOLUTION` makes events unions of level sets of a smooth
statistic that carry no information from the last bits of the release.

Example:
    >>> float(snap([1.0 + 2.0**-40])[0]), float(snap([float("inf")])[0])
    (1.0, inf)
"""

from __future__ import annotations

import numpy as np

__all__ = ["STATISTIC_RESOLUTION", "snap"]

#: Statistics are rounded to multiples of this before thresholding: 2^-30 is far above the
#: last bits of a double near the statistic's typical values (1 ulp of 1.0 is 2^-52), so no
#: event can separate releases by their rounding, and far below any difference of privacy
#: loss or log-odds that matters for a bound.
STATISTIC_RESOLUTION = 2.0**-30


def snap(s) -> np.ndarray:
    """Round a statistic to multiples of :data:`STATISTIC_RESOLUTION` (infinities kept).

    Args:
        s: statistic values (array-like).

    Returns:
        A float64 array of the same shape.
    """
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(
            np.isfinite(s), np.round(s / STATISTIC_RESOLUTION) * STATISTIC_RESOLUTION, s
        )
