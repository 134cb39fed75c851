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
from dpaudit.training.bounds import one_run_p_value as one_run_p_value

__all__ = [
    "ManyRunBound",
    "OneRunBound",
    "many_run_bound",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_p_value",
]
