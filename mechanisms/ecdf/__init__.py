"""Barczewski, Mawass & Ramon: differentially private ECDF and ROC releases.

* :mod:`mechanisms.ecdf.tree` — the tree-based ECDF and ROC releases
  (registered), their sensitivities and exact calibration.
* :mod:`mechanisms.ecdf.analysis` — post-processing of released curves:
  smoothing, inverse ECDF, ROC curve and AUC, private Hosmer–Lemeshow test.

The package re-exports the public names of these modules.
"""

from mechanisms.ecdf import analysis, federated, tree
from mechanisms.ecdf.analysis import *  # noqa: F403
from mechanisms.ecdf.tree import *  # noqa: F403

__all__ = ["analysis", "federated", "tree", *analysis.__all__, *tree.__all__]
