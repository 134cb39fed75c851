"""dpaudit: audit differential-privacy mechanisms, including functional releases.

Importing dpaudit turns on 64-bit floats in JAX (``jax_enable_x64``): privacy
losses are differences of large log densities, and float32 round-off would be
read as privacy loss.

The package is imported lazily: ``import dpaudit`` loads neither JAX nor a
submodule (so ``dpaudit --help`` answers at once); each public name is imported
on first use (module ``__getattr__``). x64 is still on before any JAX
computation: when JAX is already loaded its flag is set here, otherwise the
``JAX_ENABLE_X64`` environment variable is, which JAX reads when it is imported.
"""

import importlib
import os
import sys

if "jax" in sys.modules:
    sys.modules["jax"].config.update("jax_enable_x64", True)
else:  # read by jax at import time; the same effect as jax.config.update, without importing jax
    os.environ["JAX_ENABLE_X64"] = "1"

__version__ = "0.1.0.dev0"

__all__ = [
    "AuditOptions",
    "AuditResult",
    "BlackBoxOptions",
    "BlackBoxResult",
    "Certificate",
    "Claim",
    "Compatibility",
    "KnownFlaw",
    "Mechanism",
    "accounting",
    "audit",
    "blackbox",
    "blackbox_audit",
    "build",
    "catalogue",
    "check_adjacent",
    "classify_pair",
    "compatibility",
    "loss",
    "noise",
    "pld",
    "privacy_loss",
    "register",
    "spaces",
]

#: Where each public name lives: ``name -> (module, attribute)``; attribute ``None``: the module.
_LAZY = {
    "accounting": ("dpaudit.accounting", None),
    "blackbox": ("dpaudit.blackbox", None),
    "compatibility": ("dpaudit.model.compatibility", None),
    "loss": ("dpaudit.model.loss", None),
    "noise": ("dpaudit.model.noise", None),
    "pld": ("dpaudit.estimation.pld", None),
    "spaces": ("dpaudit.model.spaces", None),
    "check_adjacent": ("dpaudit.model.adjacency", "check_adjacent"),
    "BlackBoxOptions": ("dpaudit.blackbox", "BlackBoxOptions"),
    "BlackBoxResult": ("dpaudit.blackbox", "BlackBoxResult"),
    "blackbox_audit": ("dpaudit.blackbox", "blackbox_audit"),
    "Compatibility": ("dpaudit.model.compatibility", "Compatibility"),
    "classify_pair": ("dpaudit.model.compatibility", "classify_pair"),
    "privacy_loss": ("dpaudit.model.loss", "privacy_loss"),
    "Claim": ("dpaudit.model.claims", "Claim"),
    "KnownFlaw": ("dpaudit.model.mechanism", "KnownFlaw"),
    "Mechanism": ("dpaudit.model.mechanism", "Mechanism"),
    "build": ("dpaudit.model.registry", "build"),
    "catalogue": ("dpaudit.model.registry", "catalogue"),
    "register": ("dpaudit.model.registry", "register"),
    "audit": ("dpaudit.whitebox.engine", "audit"),
    "AuditOptions": ("dpaudit.whitebox.options", "AuditOptions"),
    "AuditResult": ("dpaudit.whitebox.result", "AuditResult"),
    "Certificate": ("dpaudit.whitebox.result", "Certificate"),
}


def __getattr__(name: str):
    """Import a public name on first use and keep it in the package namespace.

    Args:
        name: an attribute of ``dpaudit``.

    Returns:
        The public object (a function, a class or a submodule).

    Raises:
        AttributeError: for a name dpaudit does not export.
    """
    if name not in _LAZY:
        raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and the module's own (for tab completion).

    Returns:
        The sorted names.
    """
    return sorted({*globals(), *__all__})
