"""The catalogue of differential-privacy mechanisms, declared as numpyro models.

One subpackage per paper, plus the textbook mechanisms and the faulty catalogue:

* :mod:`mechanisms.iclp` — Lin & Reimherr (ICLP mean, KDE, regression, covariance);
* :mod:`mechanisms.mrs` — Mirshani, Reimherr & Slavković (Gaussian penalised mean);
* :mod:`mechanisms.hrw` — Hall, Rinaldo & Wasserman (Gaussian-process KDE and ERM);
* :mod:`mechanisms.ecdf` — Barczewski, Mawass & Ramon (private ECDF and ROC);
* :mod:`mechanisms.continual` — BMR's continual counter (Thm 0.A.1);
* :mod:`mechanisms.classic` — Laplace, Gaussian, geometric, noisy max, SVT;
* :mod:`mechanisms.composed` — programs of several noisy releases (whole-trace audits);
* :mod:`mechanisms.faulty` — mechanisms with a known flaw, for testing audits;
* :mod:`mechanisms.implementations` — float samplers and sums as implemented on finite
  computers, with their fixes (snapping, exact discrete samplers, checked sums);
* :mod:`mechanisms.common` — the builder tail shared by most of the above.

Every module registers its builders with :func:`dpaudit.register` when
imported; importing the package imports every module of every subpackage
(``pkgutil.walk_packages`` recurses into them), so ``dpaudit.catalogue()``
lists the whole catalogue. Importing it also enables dpaudit's 64-bit JAX
configuration.
"""

import importlib as _importlib
import pkgutil as _pkgutil

import dpaudit as _dpaudit  # noqa: F401  (enables jax_enable_x64)

__all__ = [
    "classic",
    "common",
    "composed",
    "continual",
    "ecdf",
    "faulty",
    "hrw",
    "iclp",
    "implementations",
    "mrs",
]

for _module in _pkgutil.walk_packages(__path__, prefix=__name__ + "."):
    _importlib.import_module(_module.name)

from mechanisms import (  # noqa: E402  (imported above)
    classic,
    common,
    composed,
    continual,
    ecdf,
    faulty,
    hrw,
    iclp,
    implementations,
    mrs,
)
