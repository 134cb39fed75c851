"""Continual observation: running counts released at every time step (BMR Thm 0.A.1).

* :mod:`mechanisms.continual.counter` — the hierarchical continual counter with
  Laplace node noise ``ceil((L+1)/2)/epsilon`` (registered), and the textbook
  binary mechanism given the same scale (faulty).
* :mod:`mechanisms.continual.gaussian` — the Gaussian version, Gaussian node noise
  ``N(0, ceil((L+1)/2) z^2)`` claimed ``1/(2 z^2)``-zCDP (registered), and one
  level's noise ``N(0, z^2)`` (faulty).

The package re-exports the public names of its modules.
"""

from mechanisms.continual import counter, gaussian
from mechanisms.continual.counter import *  # noqa: F403
from mechanisms.continual.gaussian import *  # noqa: F403

__all__ = ["counter", "gaussian", *counter.__all__, *gaussian.__all__]
