r"""Records of a white-box audit: :class:`AuditResult`, :class:`Certificate`, :class:`DirectionResult`.

Frozen records with typed fields; they become the documented JSON dicts only
in ``to_dict()`` (through :mod:`dpaudit.core.serialize`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.core.serialize import json_float, jsonable
from dpaudit.estimation.pld import DeltaCurve
from dpaudit.estimation.significance import borderline_note
from dpaudit.model.audit_record import DIRECTIONS, VERDICTS, AuditRecord
from dpaudit.model.claims import is_notion_claim, notion_certified_text, notion_summary_lines
from dpaudit.model.compatibility import Compatibility
from dpaudit.whitebox.scope import scope_text
from dpaudit.whitebox.summaries import (
    AuditCurves,
    DeltaSummary,
    DirectionAtClaim,
    EpsilonSummary,
)

__all__ = [
    "DIRECTIONS",
    "VERDICTS",
    "AuditResult",
    "Certificate",
    "DirectionResult",
    "certificate_reason",
    "import_arviz",
    "release_text",
]


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A release that certifies a violation, evaluated with the exact release densities.

    Attributes:
        release: the release ``x`` (numpy, in the mechanism's coordinates).
        loss: ``L(x) = log p(x) - log q(x)`` (``inf`` for a singular certificate).
        direction: ``"D->D'"`` (``p = p_D``) or ``"D'->D"``.
        log_p, log_q: the two log densities at ``x``.
        tolerance: the round-off margin ``L`` had to exceed ``epsilon`` by.
        kind: ``"density-ratio"`` or ``"singular"``.
        source: ``"monte-carlo"`` or ``"constructed"`` (analytic worst case).
        explanation: one sentence for reports.
        sites: for a release of several sites, the read-only ``{site name: array}`` of
            ``release`` (the flat vector split into its sites, keyed by the model's site
            names); ``None`` for one site.
    """

    release: np.ndarray
    loss: float
    direction: str
    log_p: float
    log_q: float
    tolerance: float
    kind: str
    source: str
    explanation: str
    sites: Mapping[str, np.ndarray] | None = None

    def to_dict(self) -> dict:
        """A JSON-able dict (non-finite floats as ``"inf"``/``"-inf"``).

        Returns:
            The certificate's fields, the release as a nested list (and, for a
            release of several sites, ``"sites"``: each site's value).
        """
        out = {
            "release": np.asarray(self.release).tolist(),
            "loss": json_float(self.loss),
            "direction": self.direction,
            "log_p": json_float(self.log_p),
            "log_q": json_float(self.log_q),
            "tolerance": self.tolerance,
            "kind": self.kind,
            "source": self.source,
            "explanation": self.explanation,
        }
        if self.sites is not None:
            out["sites"] = {k: np.asarray(v).tolist() for k, v in self.sites.items()}
        return out


@dataclasses.dataclass(frozen=True)
class DirectionResult:
    """Monte Carlo results of one direction.

    Attributes:
        direction: ``"D->D'"`` or ``"D'->D"``.
        n: number of losses.
        at_claim: the :class:`~dpaudit.whitebox.summaries.DirectionAtClaim`
            ``{estimate, lower, upper, std_error}`` of ``delta(epsilon_claim)``, bounds at
            ``alpha / 2`` each.
        curve: the :class:`~dpaudit.pld.DeltaCurve` (simultaneous bounds).
        max_loss: largest loss drawn.
        n_infinite: number of ``+inf`` losses.
        losses: the first ``keep_samples`` losses (numpy).
        ess, mcse: ArviZ effective sample size and Monte Carlo standard error of
            ``Y_epsilon_claim`` on the kept losses.
    """

    direction: str
    n: int
    at_claim: DirectionAtClaim
    curve: DeltaCurve
    max_loss: float
    n_infinite: int
    losses: np.ndarray
    ess: float
    mcse: float


@dataclasses.dataclass(frozen=True)
class AuditResult(AuditRecord):
    """The outcome of :func:`audit` (frozen; ``to_dict`` is JSON-able).

    Attributes:
        mechanism: the mechanism's name.
        claim: the :class:`~dpaudit.Claim` audited.
        verdict: one of :data:`VERDICTS`.
        confidence: ``1 - alpha``.
        samples: Monte Carlo releases per direction.
        seed: the seed.
        route: how losses were evaluated (``"closed-form"``, ``"density"``, ``"model"``).
        delta_at_claimed_epsilon: ``{estimate, lower, upper, monte_carlo_lower,
            monte_carlo_upper, exact_lower, exact_upper}`` of the mechanism's
            ``delta(epsilon_claim)`` (max over directions).
        epsilon_lower: certified lower bound on ``epsilon(delta_claim)``.
        epsilon_at_claimed_delta: ``{estimate, upper, exact}``: the tight
            epsilon at the claimed delta (how much budget the claim wastes, or
            by how much it is exceeded).
        certificate: a :class:`Certificate` when one certifies the violation.
        curves: the :class:`~dpaudit.whitebox.summaries.AuditCurves`, read as
            ``{epsilons, claim_index, confidence, "D->D'": {...}, "D'->D": {...},
            exact_upper, exact_lower}``.
        exact: the :class:`~dpaudit.accounting.ExactAccounting`, if any.
        compatibility: the :class:`~dpaudit.compatibility.Compatibility`, if any.
        diagnostics: ArviZ ESS/MCSE per direction, infinite-loss counts, chunking.
        directions: the two :class:`DirectionResult`.
        seconds: wall time.
        notes: sentences qualifying the verdict.
        p_value: for a violation, the probability that a correct, exactly tight mechanism
            gives evidence this strong (:mod:`dpaudit.estimation.significance`): ``0`` when no sampling
            is involved (a verified release, exact accounting); ``None`` for other verdicts.
            Not in :meth:`to_dict` (a borderline violation's is, under ``diagnostics``).
    """

    seed: int
    route: str
    delta_at_claimed_epsilon: DeltaSummary
    epsilon_lower: float
    epsilon_at_claimed_delta: EpsilonSummary
    certificate: Certificate | None
    curves: AuditCurves
    exact: ExactAccounting | None
    compatibility: Compatibility | None
    diagnostics: Mapping[str, Any]
    directions: tuple[DirectionResult, DirectionResult]
    seconds: float
    notes: tuple[str, ...]
    p_value: float | None = None

    @property
    def borderline(self) -> dict | None:
        """``{"p_value", "threshold"}`` when the violation is borderline, else ``None``.

        A violation resting on Monte Carlo bounds alone whose p-value exceeds
        :data:`dpaudit.estimation.significance.BORDERLINE_P` (in ``diagnostics["borderline"]``).
        """
        return self.diagnostics.get("borderline")

    def to_dict(self) -> dict:
        """A JSON-able dict (non-finite floats as ``"inf"``/``"-inf"``, NaN as ``None``).

        Returns:
            The documented record of the audit (see ``docs``); the golden records pin it.
        """
        return {
            **self.record_dict(),
            "seed": self.seed,
            "route": self.route,
            "delta_at_claimed_epsilon": jsonable(self.delta_at_claimed_epsilon),
            "epsilon_lower": json_float(self.epsilon_lower),
            "epsilon_at_claimed_delta": jsonable(self.epsilon_at_claimed_delta),
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "curves": jsonable(self.curves),
            "exact": None if self.exact is None else self.exact.summary(),
            "compatibility": None if self.compatibility is None else self.compatibility.to_dict(),
            "diagnostics": jsonable(self.diagnostics),
            "seconds": self.seconds,
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        """One line: mechanism, verdict, claim and the certified bound (no arrays)."""
        return (
            f"AuditResult({self.mechanism!r}, verdict={self.verdict!r}, claim=({self.claim.epsilon:g}, "
            f"{self.claim.delta:g}), epsilon_lower={self.epsilon_lower:.4g}, samples={self.samples})"
        )

    @property
    def reason(self) -> str:
        """The decisive reason for the verdict, in one line.

        A violation names its certificate (``"release x = 0.43 has loss 2 > epsilon = 1
        (D->D')"``), the exact accounting, or the Monte Carlo bound it rests on; an
        incompatibility its compatibility reason; any other verdict its certified bound.
        """
        c = self.claim
        if self.certificate is not None:
            return certificate_reason(self.certificate, c.epsilon)
        if self.compatibility is not None and self.verdict == "incompatible":
            return self.compatibility.reason
        exact = self.epsilon_at_claimed_delta.get("exact")
        if self.verdict == "violation" and exact is not None and float(exact) > c.epsilon:
            family = (self.exact.summary() or {}).get("family", "") if self.exact else ""
            return (
                f"exact accounting{f' ({family})' if family else ''}: epsilon({c.delta:g}) = "
                f"{float(exact):.4g} > epsilon = {c.epsilon:g}"
            )
        lower = self.delta_at_claimed_epsilon.get("lower")
        if self.verdict == "violation" and lower is not None and float(lower) > c.delta:
            return (
                f"delta({c.epsilon:g}) >= {float(lower):.4g} > delta = {c.delta:g} at "
                f"confidence {self.confidence:g}; epsilon({c.delta:g}) >= {self.epsilon_lower:.4g}"
            )
        notion = notion_certified_text(self) if is_notion_claim(c) else None
        if self.verdict == "violation" and notion is not None:  # refuted in the claim's notion
            return f"{notion} at confidence {self.confidence:g}, beyond {c.describe()}"
        return f"epsilon({c.delta:g}) >= {self.epsilon_lower:.4g} certified; claim epsilon = {c.epsilon:g}"

    def summary(self) -> str:
        """A few lines for people: verdict, the decisive reason, claim, certified bound.

        A violation or incompatibility leads with its :attr:`reason` (line 2); other
        verdicts end with the first note qualifying them.

        Returns:
            The text (no trailing newline).
        """
        c = self.claim
        estimate = self.epsilon_at_claimed_delta.get("estimate")
        exact = self.epsilon_at_claimed_delta.get("exact")
        anchor = (
            f"epsilon({c.delta:g}) >= {self.epsilon_lower:.4g} at confidence "
            f"{self.confidence:g}"
            + ("" if estimate is None else f"; estimate {float(estimate):.4g}")
            + ("" if exact is None else f" (exact {float(exact):.4g})")
        )
        lines = [f"{self.mechanism}: {self.verdict}"]
        decisive = self.verdict in ("violation", "incompatible")
        if decisive:
            lines.append(f"  why: {self.reason}")
        if is_notion_claim(c):  # the claim's own parameter first, then its (epsilon, delta) anchor
            lines += notion_summary_lines(self)
            lines[-1] += f" {anchor}"
        else:
            lines += [
                f"  claim: ({c.epsilon:g}, {c.delta:g})-DP, {c.adjacency}",
                f"  certified: {anchor}",
            ]
        if self.certificate is not None:
            lines.append(f"  certificate: {self.certificate.explanation}")
        elif not decisive:
            why = next((n for n in self.notes if not n.startswith("weak pair:")), "")
            if why:
                lines.append(f"  why: {why}")
        if self.borderline is not None:
            lines.append(f"  {borderline_note(self.borderline['p_value'])}")
        return "\n".join(lines + self._pair_lines())

    def _pair_lines(self) -> list[str]:
        """The pair the verdict holds on, against the declared sensitivity; a weak-pair warning."""
        scope = (self.diagnostics or {}).get("pair")
        if not scope:
            return []
        lines = [f"  pair: {scope_text(scope)}"]
        if scope.get("weak"):
            lines.append(
                f"  warning: weak pair: this {self.verdict} holds for this pair only, which "
                f"uses {100 * scope['fraction']:.3g}% of the declared sensitivity; audit a pair "
                "at the sensitivity (dpaudit audit --pairs worst)"
            )
        return lines

    def to_inference_data(self):
        """ArviZ ``InferenceData``: kept losses and ``Y_epsilon_claim`` as draws, curves as data.

        Groups: ``posterior`` holds ``loss`` and ``hockey_stick`` with dims
        ``(chain, draw, direction)`` (one chain; these are i.i.d. Monte Carlo
        draws, put where ArviZ's diagnostics look for them); ``constant_data``
        holds the curves over ``epsilon``. The verdict and claim are attributes.

        Returns:
            An ``arviz.InferenceData``.
        """
        az = import_arviz()
        n = min(d.losses.size for d in self.directions)
        losses = np.stack([d.losses[:n] for d in self.directions], axis=-1)[None]
        y = -np.expm1(np.minimum(self.claim.epsilon - losses, 0.0))
        constant = {"epsilons": np.asarray(self.curves["epsilons"])}
        dims = {
            "loss": ["direction"],
            "hockey_stick": ["direction"],
            "epsilons": ["epsilon"],
        }
        for i, name in enumerate(DIRECTIONS):
            for field in ("estimate", "lower", "upper"):
                key = f"delta_{field}_{'forward' if i == 0 else 'backward'}"
                constant[key] = np.asarray(self.curves[name][field])
                dims[key] = ["epsilon"]
        for key in ("exact_upper", "exact_lower"):
            if self.curves.get(key) is not None:
                constant[f"delta_{key}"] = np.asarray(self.curves[key])
                dims[f"delta_{key}"] = ["epsilon"]
        attrs = {
            "mechanism": self.mechanism,
            "verdict": self.verdict,
            "claim_epsilon": self.claim.epsilon,
            "claim_delta": self.claim.delta,
            "confidence": self.confidence,
            "seed": self.seed,
            "samples": self.samples,
            "route": self.route,
        }
        posterior = {"loss": losses, "hockey_stick": y} if n else None  # keep_samples=0: none
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return az.from_dict(
                posterior=posterior,
                constant_data=constant,
                coords={"direction": list(DIRECTIONS)},
                dims=dims,
                attrs=attrs,
            )

    def to_netcdf(self, path) -> str:
        """Write :meth:`to_inference_data` to a netCDF file.

        Args:
            path: the file to write.

        Returns:
            The path written, as a string.
        """
        return str(self.to_inference_data().to_netcdf(str(path)))


def release_text(release) -> str:
    """A release in a few characters: ``0.4547``, ``[0.1, 0.2, 0.3]``, ``[0.1, 0.2, ...] (64 values)``.

    Args:
        release: the release (array-like; a release of several sites is shown flat).

    Returns:
        The text.
    """
    values = np.asarray(release, dtype=float).ravel()
    if values.size == 1:
        return f"{values[0]:.4g}"
    shown = ", ".join(f"{v:.4g}" for v in values[:3])
    return f"[{shown}]" if values.size <= 3 else f"[{shown}, ...] ({values.size} values)"


def certificate_reason(certificate: Certificate, epsilon: float) -> str:
    """One line naming a certificate: the release, its loss and the claimed epsilon.

    Args:
        certificate: the :class:`Certificate`.
        epsilon: the claimed epsilon.

    Returns:
        For example ``"release x = 0.43 has loss 2 > epsilon = 1 (D->D')"``.
    """
    x = release_text(certificate.release)
    if certificate.kind == "singular" or certificate.loss == float("inf"):
        other = "D'" if certificate.direction == "D->D'" else "D"
        return f"release x = {x} is impossible under {other} (loss inf > epsilon = {epsilon:g})"
    return (
        f"release x = {x} has loss {certificate.loss:.4g} > epsilon = {epsilon:g} "
        f"({certificate.direction})"
    )


def import_arviz():
    """Import ArviZ with its FutureWarnings silenced.

    Returns:
        The ``arviz`` module.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz
