"""Library adapters: OpenDP, diffprivlib and privacy accountants, translated for the engines.

Each adapter reads a library's own objects (an OpenDP measurement, a diffprivlib
tool or model, an accountant) and states what dpaudit's engines need: a sampler,
a claim, datasets and their neighbours (:class:`Auditable`), or a claim alone
(:mod:`~dpaudit.adapters.accountants`). The libraries are imported on first use:
this package loads without them.
"""

from dpaudit.adapters.accountants import claim_from_accountant, profile_claim
from dpaudit.adapters.auditable import (
    Auditable,
    find_named,
    library_arguments,
    run_library_audits,
    write_library_specs,
)
from dpaudit.adapters.diffprivlib import from_diffprivlib, model_parameters
from dpaudit.adapters.opendp import from_opendp

__all__ = [
    "Auditable",
    "claim_from_accountant",
    "find_named",
    "from_diffprivlib",
    "from_opendp",
    "library_arguments",
    "model_parameters",
    "profile_claim",
    "run_library_audits",
    "write_library_specs",
]
