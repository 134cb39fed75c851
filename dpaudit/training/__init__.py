"""Auditing DP training: canary audits of training pipelines, many-run and one-run.

Layer: an engine. It reads dpaudit's claims, accounting and confidence bounds;
nothing below it imports it (only ``dpaudit``'s public re-exports, the CLI,
``mechanisms/`` and ``audits/``).
"""

from dpaudit.training.bounds import ManyRunBound as ManyRunBound
from dpaudit.training.bounds import OneRunBound as OneRunBound
from dpaudit.training.bounds import many_run_bound as many_run_bound
from dpaudit.training.bounds import one_run_bound as one_run_bound
from dpaudit.training.bounds import one_run_epsilon as one_run_epsilon
from dpaudit.training.bounds import one_run_mu as one_run_mu
from dpaudit.training.bounds import one_run_p_value as one_run_p_value
from dpaudit.training.canaries import DiracCanaries as DiracCanaries
from dpaudit.training.canaries import GradientCanary as GradientCanary
from dpaudit.training.canaries import InputCanary as InputCanary
from dpaudit.training.canaries import UserCanary as UserCanary
from dpaudit.training.canaries import subsampled_gaussian_loss as subsampled_gaussian_loss
from dpaudit.training.engine import ProfileClaim as ProfileClaim
from dpaudit.training.engine import TrainingAuditResult as TrainingAuditResult
from dpaudit.training.engine import TrainingTarget as TrainingTarget
from dpaudit.training.engine import one_run_audit as one_run_audit
from dpaudit.training.engine import one_run_training_audit as one_run_training_audit
from dpaudit.training.engine import training_audit as training_audit
from dpaudit.training.rank import RankBound as RankBound
from dpaudit.training.rank import rank_bound as rank_bound

__all__ = [
    "DiracCanaries",
    "GradientCanary",
    "InputCanary",
    "ManyRunBound",
    "OneRunBound",
    "ProfileClaim",
    "RankBound",
    "TrainingAuditResult",
    "TrainingTarget",
    "UserCanary",
    "many_run_bound",
    "one_run_audit",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_mu",
    "one_run_p_value",
    "one_run_training_audit",
    "rank_bound",
    "subsampled_gaussian_loss",
    "training_audit",
]
