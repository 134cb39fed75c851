"""Programs and time of a warm process auditing the multi-site (``JointRelease``) specs.

The multi-site white-box specs (the BMR federated ECDF, Hosmer-Lemeshow, composed ROC and
the HRW private-bandwidth KDE, with their faulty variants) run one after another in one
process, as ``make audit`` runs them, through :mod:`benchmarks.audit_fixed_costs` (per audit:
wall and CPU seconds, jaxpr traces, lowerings, XLA compilations, persistent-cache hits).
Run it twice with the same ``--cache-dir``: the first run fills the persistent cache, the
second is the warm figure. Before the joint law's constants were ``jit`` arguments, every
audit traced and lowered its programs again (the model, a new closure per build, was part
of each program's static key); now only the first audit of a family and shape does.

Usage::

    PYTHONPATH=$PWD python benchmarks/joint_release_programs.py --cache-dir .cache/jax  # fills
    PYTHONPATH=$PWD python benchmarks/joint_release_programs.py --cache-dir .cache/jax  # warm
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import audit_fixed_costs  # noqa: E402

#: Every shipped multi-site white-box spec, a family's catalogue spec before its variants.
SPECS = (
    "catalogue/bmr-federated-ecdf",
    "faulty/bmr-federated-ecdf-aggregate-uncounted",
    "faulty/bmr-federated-ecdf-noise-split",
    "catalogue/bmr-hosmer-lemeshow",
    "faulty/bmr-hosmer-lemeshow-budget",
    "catalogue/composed-bmr-roc",
    "faulty/composed-bmr-roc-parallel",
    "catalogue/hrw-private-bandwidth-kde",
    "faulty/hrw-bandwidth-budget-ignored",
    "faulty/hrw-online-unconditioned",
    "faulty/hrw-unsquared-covariance",
)

if __name__ == "__main__":
    audit_fixed_costs.main([*SPECS, *sys.argv[1:]])
