"""Continual observation: running counts released at every time step (BMR Thm 0.A.1).

* :mod:`mechanisms.continual.counter` — the hierarchical continual counter with
  Laplace node noise ``ceil((L+1)/2)/epsilon`` (registered), and the textbook
  binary mechanism given the same scale (faulty).

The package re-exports the public names of its modules.
"""

from mechanisms.continual import counter
from mechanisms.continual.counter import *  # noqa: F403

__all__ = ["counter", *counter.__all__]
