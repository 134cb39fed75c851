"""The catalogue of differential-privacy mechanisms, declared as numpyro models.

The catalogue itself arrives with the mechanism-catalogue issues; importing
this package already enables dpaudit's 64-bit JAX configuration.
"""

import dpaudit as _dpaudit  # noqa: F401  (enables jax_enable_x64)
