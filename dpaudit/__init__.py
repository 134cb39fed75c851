"""dpaudit: audit differential-privacy mechanisms, including functional releases.

Importing dpaudit turns on 64-bit floats in JAX (``jax_enable_x64``): privacy
losses are differences of large log densities, and float32 round-off would be
read as privacy loss.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0.dev0"

__all__ = [
    "AuditResult",
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

from dpaudit import accounting as accounting  # noqa: E402
from dpaudit import blackbox as blackbox  # noqa: E402
from dpaudit import compatibility as compatibility  # noqa: E402
from dpaudit import loss as loss  # noqa: E402
from dpaudit import noise as noise  # noqa: E402
from dpaudit import pld as pld  # noqa: E402
from dpaudit import spaces as spaces  # noqa: E402
from dpaudit.adjacency import check_adjacent as check_adjacent  # noqa: E402
from dpaudit.blackbox import BlackBoxResult as BlackBoxResult  # noqa: E402
from dpaudit.blackbox import blackbox_audit as blackbox_audit  # noqa: E402
from dpaudit.compatibility import Compatibility as Compatibility  # noqa: E402
from dpaudit.compatibility import classify_pair as classify_pair  # noqa: E402
from dpaudit.loss import privacy_loss as privacy_loss  # noqa: E402
from dpaudit.mechanism import Claim as Claim  # noqa: E402
from dpaudit.mechanism import KnownFlaw as KnownFlaw  # noqa: E402
from dpaudit.mechanism import Mechanism as Mechanism  # noqa: E402
from dpaudit.registry import build as build  # noqa: E402
from dpaudit.registry import catalogue as catalogue  # noqa: E402
from dpaudit.registry import register as register  # noqa: E402
from dpaudit.whitebox.engine import audit as audit  # noqa: E402
from dpaudit.whitebox.result import AuditResult as AuditResult  # noqa: E402
from dpaudit.whitebox.result import Certificate as Certificate  # noqa: E402
