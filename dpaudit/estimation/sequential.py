"""Sequential certification: a pre-registered group-sequential plan with Bonferroni alpha spending.

With ``stopping="sequential"`` the certification releases are counted in stages and
the certified bound is computed at a few *looks* fixed before any release is drawn
(after 1/64, 1/32, ..., 1/2 and all of the budget, at chunk boundaries: the
releases are drawn in chunks of at most 1/64 of the budget). The audit
stops at the first look whose certified epsilon lower bound exceeds the claim: a
clear violation costs a fraction of the budget.

Validity: look ``j`` uses the audit's exact bound at its own level ``alpha_j`` (the
Clopper–Pearson pair at ``alpha_j / 2`` per side; for a pure-epsilon claim the
conditional ratio bound at ``alpha_j``, on Poisson release counts with the look's
planned releases as mean, drawn as independent increments), and the levels sum to
``alpha``. So with probability ``>= 1 - sum_j alpha_j = confidence`` *every* look's
bound holds at once (a union bound; it needs only each look's bound to be valid on
its own, not any dependence structure between looks), and then whichever look the
audit stops at, its bound holds: the stopped bound exceeds the truth with
probability at most ``alpha``, for any stopping rule. Using each look's bound at
the full level ``alpha`` instead (no spending) would not keep that rate.

Spending: half of ``alpha`` goes to the last look and the other half is split
equally among the earlier ones. An audit that never stops (a correct mechanism, the
common case in CI) then reports its full-budget bound at ``alpha / 2`` instead of
``alpha`` (a small loss: the Clopper–Pearson bound moves with ``log(1/alpha)``),
while an early look still certifies any violation whose margin is clear.

Example:
    >>> plan = look_plan(1_000_000, look_chunk(1_000_000, 131_072), 0.95)
    >>> plan.releases
    (15625, 31250, 62500, 125000, 250000, 500000, 1000000)
    >>> round(sum(1 - c for c in plan.confidences), 12)
    0.05
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LOOKS", "LookPlan", "SequentialStop", "look_chunk", "look_plan", "stopping_record"]

#: Looks of a full plan: after 1/64, 1/32, ..., 1/2 and all of the budget. Seven looks cost
#: each early one alpha/12 (``log(1/alpha)`` grows by ~1.8 at 95 %); more looks would cost the
#: early ones more level for little earlier stopping (each look doubles the releases).
LOOKS = 7
#: The share of alpha kept for the last look (the bound of an audit that never stops).
LAST_LOOK_SHARE = 0.5


class LookPlan(NamedTuple):
    """The pre-registered looks of a sequential certification.

    Attributes:
        chunks: at look ``j``, the first ``chunks[j]`` chunks of each dataset are counted.
        releases: certification releases per dataset counted at each look.
        confidences: the confidence ``1 - alpha_j`` of each look's bound.
        confidence: the overall confidence (``1 - sum_j alpha_j``).
    """

    chunks: tuple[int, ...]
    releases: tuple[int, ...]
    confidences: tuple[float, ...]
    confidence: float


def look_chunk(samples: int, chunk: int) -> int:
    """Releases per sampler call of a sequential certification: at most 1/64 of the budget.

    So the first look comes after 1/64 of the budget (not after one full-size chunk).

    Args:
        samples: the certification budget per dataset.
        chunk: the audit's chunk size (releases per sampler call).

    Returns:
        ``min(chunk, ceil(samples / 2^(LOOKS - 1)))``.
    """
    return max(1, min(chunk, -(-samples // 2 ** (LOOKS - 1))))


def look_plan(samples: int, chunk: int, confidence: float) -> LookPlan:
    """The looks and their levels for ``samples`` releases per dataset drawn ``chunk`` at a time.

    Looks fall on chunk boundaries (the first ``ceil(n_chunks / 2^k)`` chunks,
    ``k = 6, ..., 0``, duplicates dropped), so they depend only on the budget and
    the chunk size, both fixed before any release is drawn. With a single look the
    plan is the fixed-budget certification at ``confidence``.

    Args:
        samples: the certification budget per dataset.
        chunk: releases per sampler call.
        confidence: the overall ``1 - alpha``.

    Returns:
        The :class:`LookPlan`.
    """
    n_chunks = -(-samples // min(chunk, samples))
    counts = sorted({-(-n_chunks // 2**k) for k in range(LOOKS - 1, -1, -1)})
    releases = tuple(min(c * chunk, samples) for c in counts)
    alpha = 1.0 - confidence
    if len(counts) == 1:
        alphas = [alpha]
    else:
        early = (1.0 - LAST_LOOK_SHARE) * alpha / (len(counts) - 1)
        alphas = [early] * (len(counts) - 1) + [LAST_LOOK_SHARE * alpha]
    return LookPlan(tuple(counts), releases, tuple(1.0 - a for a in alphas), confidence)


class SequentialStop(NamedTuple):
    """When and why a sequential certification stopped (a black-box result's ``stopping``).

    Attributes:
        rule: ``"sequential"``.
        look: the look whose bound is reported (1-based).
        looks: the looks of the plan.
        releases: releases per dataset counted at that look.
        planned: the planned budget (releases per dataset at the last look).
        budget_fraction: ``releases / planned``.
        confidence_at_look: the level the look's bound holds at.
        stopped_early: whether a violation was certified before the last look.
        reason: one sentence for reports.
    """

    rule: str
    look: int
    looks: int
    releases: int
    planned: int
    budget_fraction: float
    confidence_at_look: float
    stopped_early: bool
    reason: str

    def to_dict(self) -> dict:
        """The fields as a dict, in order (the JSON ``"stopping"`` record).

        Returns:
            The dict.
        """
        return self._asdict()


def stopping_record(plan: LookPlan, look: int, stopped: bool) -> SequentialStop:
    """When and why a sequential certification stopped, for the result.

    Args:
        plan: the :class:`LookPlan`.
        look: the index of the look whose bound is reported.
        stopped: whether the audit stopped there because a violation was certified.

    Returns:
        The :class:`SequentialStop`.
    """
    n, planned = plan.releases[look], plan.releases[-1]
    level = f"{plan.confidences[look]:.6g}"
    if stopped:
        reason = (
            f"stopped at look {look + 1} of {len(plan.releases)} ({n} of {planned} releases per "
            f"dataset): the violation was certified there at that look's confidence {level}."
        )
    else:
        reason = (
            f"ran all {len(plan.releases)} looks ({planned} releases per dataset): no look "
            f"certified a violation; the bound is the last look's, at confidence {level}."
        )
    return SequentialStop(
        rule="sequential",
        look=look + 1,
        looks=len(plan.releases),
        releases=n,
        planned=planned,
        budget_fraction=n / planned,
        confidence_at_look=plan.confidences[look],
        stopped_early=bool(stopped and look + 1 < len(plan.releases)),
        reason=reason,
    )
