"""The catalogue of differential-privacy mechanisms, declared as numpyro models.

Every module of this package registers its builders with
:func:`dpaudit.register` when imported; importing the package imports them
all, so ``dpaudit.catalogue()`` lists the whole catalogue. Importing it also
enables dpaudit's 64-bit JAX configuration.
"""

import importlib as _importlib
import pkgutil as _pkgutil

import dpaudit as _dpaudit  # noqa: F401  (enables jax_enable_x64)

for _module in _pkgutil.walk_packages(__path__, prefix=__name__ + "."):
    _importlib.import_module(_module.name)
