"""Library adapters: OpenDP, diffprivlib and privacy accountants, translated for the engines.

Each adapter reads a library's own objects (an OpenDP measurement, a diffprivlib
tool or model, an accountant) and states what dpaudit's engines need: a sampler,
a claim, datasets and their neighbours (:class:`Auditable`), or a claim alone
(:mod:`~dpaudit.adapters.accountants`). The libraries are imported on first use:
this package loads without them.
"""

from dpaudit.adapters.auditable import Auditable
from dpaudit.adapters.opendp import from_opendp

__all__ = ["Auditable", "from_opendp"]
