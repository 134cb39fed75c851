"""OpenDP measurements audited as they are: claim, adjacency and datasets read off the measurement.

:func:`from_opendp` turns an OpenDP ``Measurement`` (a primitive, a chain
``transformation >> measurement``, a composition) into an
:class:`~dpaudit.adapters.Auditable`:

* **the claim** is OpenDP's own privacy map at ``d_in``, read in the notion of the
  output measure: ``MaxDivergence`` -> ``Claim(epsilon)``;
  ``ZeroConcentratedDivergence`` -> ``ZCDPClaim(rho)``; ``Approximate<MaxDivergence>``
  -> ``Claim(epsilon, delta)``; ``SmoothedMaxDivergence`` (a privacy profile) ->
  ``Claim(epsilon(delta), delta)`` at the ``delta`` given;
* **the adjacency** comes from the input metric: ``SymmetricDistance`` and
  ``InsertDeleteDistance`` at ``d_in = 1`` are add/remove, at ``d_in = 2`` replace-one
  (a replacement is one removal and one addition); ``ChangeOneDistance`` and
  ``HammingDistance`` at ``d_in = 1`` are replace-one; ``AbsoluteDistance``,
  ``L1Distance`` and ``L2Distance`` take query answers whose neighbours move by ``d_in``
  in that norm (the claim's ``sensitivity`` and ``sensitivity_norm``);
* **the datasets** come from the input domain: a scalar answer (``AtomDomain``) is
  paired with the answer ``d_in`` away; a vector of answers gets the StatDP patterns of
  :class:`~dpaudit.blackbox.AutoPairs` ``(kind="answers")``; records
  (``VectorDomain`` under a dataset metric) get ``AutoPairs(kind="records")`` in the
  element domain's bounds (or ``domain=`` when the domain is unbounded).

A caller who states a claim of their own (``claim=``: a budget read off another
measure, a composition claimed at one query's budget) has *that* claim audited; OpenDP's
map stays in :attr:`~dpaudit.adapters.Auditable.library_claim` and in the notes.

**Sampling.** OpenDP draws from the operating system's secure generator and cannot be
seeded: the audit is valid (its bound needs independent releases only) but not
reproducible, and the result says so (``reproducible = False``; the seed still fixes the
selection's own draws). Releases are drawn ``batch`` at a time through one call of
``make_composition([measurement] * batch)`` where OpenDP composes the output measure
(the composition evaluates each copy with fresh randomness on the same input, so the
releases are independent draws of the measurement), else one call per release. The
compositions are built once per size and kept; each call goes through OpenDP's own invoke,
and its output is read by :mod:`dpaudit.adapters.opendp_output` (the same FFI reads as
OpenDP's converter, without its per-element wrapper checks: about half the cost per release
on OpenDP 0.16, the version it reads; any other version keeps OpenDP's conversion).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable

import numpy as np

from dpaudit.adapters.auditable import Auditable
from dpaudit.adapters.opendp_output import invoke_reader
from dpaudit.blackbox import AutoPairs
from dpaudit.model.claims import Claim, ZCDPClaim, is_notion_claim

__all__ = ["MEASURES", "METRICS", "from_opendp"]

#: The output measures :func:`from_opendp` reads, and the claim each becomes.
MEASURES = {
    "MaxDivergence": "epsilon-DP (Claim)",
    "ZeroConcentratedDivergence": "rho-zCDP (ZCDPClaim)",
    "Approximate<MaxDivergence>": "(epsilon, delta)-DP (Claim)",
    "SmoothedMaxDivergence": "(epsilon(delta), delta)-DP at the delta given (Claim)",
}
#: The input metrics :func:`from_opendp` reads: dataset distances (d_in an integer) ...
_DATASET_METRICS = {
    "SymmetricDistance": "add/remove at d_in = 1, replace-one at d_in = 2",
    "InsertDeleteDistance": "add/remove at d_in = 1, replace-one at d_in = 2",
    "ChangeOneDistance": "replace-one at d_in = 1",
    "HammingDistance": "replace-one at d_in = 1",
}
#: ... and distances between query answers (d_in the sensitivity, in that norm).
_SENSITIVITY_METRICS = {"AbsoluteDistance": "l1", "L1Distance": "l1", "L2Distance": "l2"}
METRICS = {
    **_DATASET_METRICS,
    **{k: f"query answers, sensitivity d_in in {v}" for k, v in _SENSITIVITY_METRICS.items()},
}
# Carrier types of OpenDP atoms, as Python types of one record or answer.
_FLOATS = ("f32", "f64")
_INTEGERS = ("i8", "i16", "i32", "i64", "i128", "u8", "u16", "u32", "u64", "u128", "usize")
# Records generated for a dataset input whose size the domain does not fix.
_DEFAULT_RECORDS = 10
# Releases per OpenDP call when the measure composes (one composition of this many copies).
_DEFAULT_BATCH = 1000


def _type_name(obj) -> str:
    """``"L1Distance"`` for ``L1Distance<f64>``; the name of a measure or metric's type."""
    t = obj.type
    origin = getattr(t, "origin", None)
    if origin is None:
        return str(t)
    args = getattr(t, "args", None) or ()
    return f"{origin}<{', '.join(str(a) for a in args)}>" if origin == "Approximate" else origin


def _check_measurement(measurement) -> None:
    needed = ("input_domain", "input_metric", "output_measure", "map", "invoke")
    if not all(hasattr(measurement, a) for a in needed) or hasattr(measurement, "output_metric"):
        raise TypeError(
            f"from_opendp needs an OpenDP Measurement, got {type(measurement).__name__}; "
            "end a transformation with a measurement (e.g. >> dp.m.then_laplace(scale))."
        )


def _metric(measurement) -> str:
    name = _type_name(measurement.input_metric)
    if name not in METRICS:
        raise ValueError(
            f"from_opendp does not know the input metric {name}; supported are "
            f"{', '.join(METRICS)} (audit other inputs with dpaudit.blackbox_audit and a claim "
            "of your own)."
        )
    return name


def _check_d_in(metric: str, d_in, distance_type: str):
    """``d_in`` as OpenDP's map takes it (an int for datasets and integer answers)."""
    integral = metric in _DATASET_METRICS or distance_type in _INTEGERS
    ok = isinstance(d_in, numbers.Integral if integral else numbers.Real)
    if isinstance(d_in, bool) or not ok:
        kind = "an integer" if integral else "a number"
        raise TypeError(
            f"d_in must be {kind} (a distance in {metric} of {distance_type}), got "
            f"{type(d_in).__name__} {d_in!r}."
        )
    d_in = int(d_in) if integral else float(d_in)
    if not (math.isfinite(d_in) and d_in > 0):
        raise ValueError(f"d_in must be a finite distance > 0, got {d_in!r}.")
    allowed = (1, 2) if metric in ("SymmetricDistance", "InsertDeleteDistance") else (1,)
    if metric in _DATASET_METRICS and d_in not in allowed:
        raise ValueError(
            f"d_in = {d_in} under {metric} is a group of records; dpaudit audits one record "
            f"added, removed or replaced: give d_in in {allowed}."
        )
    return d_in


def _adjacency(metric: str, d_in) -> str:
    if metric in ("SymmetricDistance", "InsertDeleteDistance"):
        return "add-remove" if d_in == 1 else "replace-one"
    return "replace-one"


def _privacy_map(measurement, d_in):
    try:
        return measurement.map(d_in)
    except Exception as err:  # OpenDPException: the map refuses this d_in
        raise ValueError(f"OpenDP's privacy map refused d_in = {d_in!r}: {err}".strip()) from None


def _claim_of(measurement, d_in, metric: str, delta: float | None):
    """The claim OpenDP's privacy map states at ``d_in``, in the output measure's notion."""
    measure = _type_name(measurement.output_measure)
    if measure not in MEASURES:
        raise ValueError(
            f"from_opendp does not know the output measure {measure}; supported are "
            f"{', '.join(MEASURES)}."
        )
    if measure == "SmoothedMaxDivergence" and delta is None:
        raise ValueError(
            "the output measure SmoothedMaxDivergence states a privacy profile: pass delta= "
            "(the delta at which its epsilon is claimed)."
        )
    common = {"adjacency": _adjacency(metric, d_in)}
    if metric in _SENSITIVITY_METRICS:
        common.update(sensitivity_norm=_SENSITIVITY_METRICS[metric], sensitivity=float(d_in))
    reference = f"OpenDP privacy map of the measurement at d_in = {d_in!r} ({metric})"
    value = _privacy_map(measurement, d_in)
    if measure == "MaxDivergence":
        return Claim(epsilon=float(value), reference=reference, **common)
    if measure == "ZeroConcentratedDivergence":
        return ZCDPClaim(rho=float(value), reference=reference, **common)
    if measure == "SmoothedMaxDivergence":
        epsilon = float(value.epsilon(delta))
        return Claim(epsilon=epsilon, delta=float(delta), reference=reference, **common)
    epsilon, stated_delta = value
    return Claim(epsilon=float(epsilon), delta=float(stated_delta), reference=reference, **common)


def _scalar_type(carrier: str) -> type:
    if carrier in _FLOATS:
        return float
    if carrier in _INTEGERS:
        return int
    if carrier == "bool":
        return bool
    raise ValueError(
        f"from_opendp reads records and answers of numbers or booleans, not {carrier}; "
        "audit this measurement with dpaudit.blackbox_audit and a sampler of your own."
    )


def _domain_shape(domain) -> tuple[str, type, tuple | None, int | None]:
    """``("atom" | "vector", scalar type, bounds, size)`` of an OpenDP input domain."""
    name = _type_name(domain)
    if name == "AtomDomain":
        kind, atom, size = "atom", domain, None
    elif name == "VectorDomain":
        kind, atom, size = "vector", domain.element_domain, domain.size
    else:
        raise ValueError(
            f"from_opendp does not know the input domain {domain}; supported are AtomDomain "
            "(one answer) and VectorDomain(AtomDomain) (records or a vector of answers)."
        )
    scalar = _scalar_type(str(atom.carrier_type))
    bounds = atom.bounds if scalar is not bool else None
    return kind, scalar, bounds, size


def _converter(kind: str, scalar: type) -> Callable:
    """Dataset arrays (``.npy``-friendly) -> OpenDP's carrier (a scalar or a list)."""
    if kind == "atom":
        return lambda data: scalar(np.asarray(data).reshape(-1)[0].item())
    return lambda data: [scalar(v) for v in np.asarray(data).reshape(-1).tolist()]


def _scalar_pair(scalar, bounds, d_in, data):
    """One answer and the answer ``d_in`` above it (below, at the upper bound)."""
    x0 = 0 if data is None else np.asarray(data).reshape(-1)[0].item()
    lo, hi = bounds if bounds is not None else (-math.inf, math.inf)
    x0 = min(max(x0, lo), hi)
    x1 = x0 + d_in if x0 + d_in <= hi else x0 - d_in
    return [(np.asarray([x0], dtype=float), np.asarray([x1], dtype=float))]


def _records(scalar, bounds, domain, size, data, records):
    """Base records in the domain, and the domain ``(lo, hi)`` of ``AutoPairs``."""
    if domain is None:
        domain = bounds if scalar is not bool else (0, 1)
    if domain is None:
        raise ValueError(
            "the input domain's records are unbounded: pass domain=(lo, hi), the values a "
            "record may take (e.g. the clamp bounds of the chain)."
        )
    lo, hi = (float(v) for v in domain)
    if data is None:
        count = size if size is not None else records
        data = np.linspace(lo, hi, count)
        data = np.round(data) if scalar is not float else data
    return np.asarray(data, dtype=float), (lo, hi)


def _datasets(kind, metric, claim, shape, d_in, options):
    """The base dataset and the neighbours (pairs or AutoPairs), with a note."""
    scalar, bounds, size = shape
    data, domain, records = options
    if kind == "atom" and metric == "AbsoluteDistance":
        pairs = _scalar_pair(scalar, bounds, d_in, data)
        note = f"one answer and the answer d_in = {d_in:g} away: {pairs[0][0][0]:g} and {pairs[0][1][0]:g}"
        return pairs[0][0], pairs, note
    if kind == "vector" and metric in _SENSITIVITY_METRICS:
        if data is None and size is None:
            raise ValueError(
                f"the input domain is a vector of answers of no fixed size: pass data= (a base "
                f"vector of answers) to audit under {metric}."
            )
        base = np.zeros(size) if data is None else np.asarray(data, dtype=float)
        note = f"the StatDP answer patterns around {base.size} answers, moved by d_in in {metric}"
        return base, AutoPairs(kind="answers"), note
    if kind == "vector" and metric in _DATASET_METRICS:
        base, box = _records(scalar, bounds, domain, size, data, records)
        note = f"{base.shape[0]} records in [{box[0]:g}, {box[1]:g}], one {claim.adjacency} record"
        return base, AutoPairs(kind="records", domain=box), note
    raise ValueError(
        f"from_opendp cannot pair the input domain ({kind}) with the metric {metric}: a "
        "scalar goes with AbsoluteDistance, a vector with a dataset metric or L1/L2Distance."
    )


def _sampler(measurement, convert: Callable, batch: int, name: str) -> tuple[Callable, str]:
    """``sampler(data, n, key)`` drawing ``batch`` releases per OpenDP call when it composes.

    The compositions are built once per size and kept (``sampler.counts`` counts the
    builds and the OpenDP calls); each output is read by :func:`invoke_reader` where the
    installed OpenDP is the one it reads, else by OpenDP's own conversion.
    """
    try:
        from opendp.combinators import make_composition

        make_composition([measurement] * 2)
        composes = True
    except Exception:  # the measure does not compose (or "contrib" is off): one call each
        composes = False
    built: dict[int, object] = {}
    counts = {"builds": 0, "calls": 0}
    call = invoke_reader() or (lambda m, arg: m(arg))

    def once(m, arg):
        counts["calls"] += 1
        return call(m, arg)

    def draw(arg, n: int) -> list:
        if not composes or batch == 1:
            return [once(measurement, arg) for _ in range(n)]
        out = []
        while len(out) < n:
            k = min(batch, n - len(out))
            if k not in built:
                built[k] = make_composition([measurement] * k) if k > 1 else measurement
                counts["builds"] += k > 1
            got = once(built[k], arg)
            out.extend(got if k > 1 else [got])
        return out

    def sampler(data, n, key):  # key unused: OpenDP cannot be seeded
        return np.asarray(draw(convert(data), int(n)))

    sampler.__name__ = name
    sampler.reproducible = False
    # unseeded, every release independent: a request for m draws m (no chunk drawn and cut)
    sampler.prefix_stable = True
    sampler.counts = counts
    how = (
        f"{batch} releases per OpenDP call (make_composition of {batch} copies)"
        if composes and batch > 1
        else "one OpenDP call per release"
    )
    return sampler, how


def _stated(claim, library_claim):
    """A caller's claim, with the input metric's sensitivity filled in when it states none."""
    if claim is None:
        return library_claim, ()
    if not (isinstance(claim, Claim) or is_notion_claim(claim)):
        raise TypeError(
            f"claim must be a dpaudit.Claim or a notion claim (ZCDPClaim, ...), got "
            f"{type(claim).__name__}."
        )
    if claim.sensitivity_norm is None and library_claim.sensitivity_norm is not None:
        claim = dataclasses.replace(
            claim,
            sensitivity_norm=library_claim.sensitivity_norm,
            sensitivity=library_claim.sensitivity,
        )
    note = (
        f"The claim audited is the one stated ({_describe(claim)}), not OpenDP's own privacy "
        f"map ({_describe(library_claim)})."
    )
    return claim, (note,)


def _describe(claim) -> str:
    if is_notion_claim(claim):
        return f"{claim.describe()}, {claim.adjacency}"
    return f"epsilon = {claim.epsilon:.6g}, delta = {claim.delta:g}, {claim.adjacency}"


def from_opendp(
    measurement,
    d_in,
    *,
    delta: float | None = None,
    claim=None,
    data=None,
    domain: tuple | None = None,
    records: int = _DEFAULT_RECORDS,
    batch: int = _DEFAULT_BATCH,
    name: str | None = None,
) -> Auditable:
    """An OpenDP measurement as an :class:`~dpaudit.adapters.Auditable` (see the module docs).

    Args:
        measurement: an OpenDP ``Measurement`` (OpenDP's ``"contrib"`` feature enabled
            by the caller as usual).
        d_in: the input distance the claim is stated at: an integer number of records for
            a dataset metric (1, or 2 for replace-one under ``SymmetricDistance``), the
            sensitivity for ``AbsoluteDistance``/``L1Distance``/``L2Distance``.
        delta: for ``SmoothedMaxDivergence``: the delta of the claim.
        claim: a claim to audit instead of OpenDP's map (what a caller states).
        data: the base dataset (default: generated from the input domain).
        domain: ``(lo, hi)`` of a record, for records whose domain has no bounds.
        records: records generated when the domain does not fix the size.
        batch: releases per OpenDP call (``1``: one call per release).
        name: the mechanism's name in reports (default ``"opendp"`` and the measure).

    Returns:
        The :class:`~dpaudit.adapters.Auditable`; ``.audit(samples=..., ...)`` runs
        :func:`~dpaudit.blackbox_audit` on it.

    Raises:
        TypeError: for an object that is not a measurement, a ``d_in`` of the wrong type
            or a ``claim`` that is not a claim.
        ValueError: for an output measure, input metric or input domain the adapter does
            not know (the message lists those it does), a ``d_in`` OpenDP's map refuses,
            ``SmoothedMaxDivergence`` without ``delta``, or unbounded records without
            ``domain``.

    Example:
        >>> import opendp.prelude as dp  # doctest: +SKIP
        >>> dp.enable_features("contrib")  # doctest: +SKIP
        >>> m = dp.m.make_laplace(dp.atom_domain(T=float, nan=False),
        ...                       dp.absolute_distance(T=float), 1.0)  # doctest: +SKIP
        >>> from_opendp(m, d_in=1.0).claim.epsilon  # doctest: +SKIP
        1.0
    """
    _check_measurement(measurement)
    metric = _metric(measurement)
    d_in = _check_d_in(metric, d_in, str(measurement.input_metric.distance_type))
    if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1, got {batch!r}.")
    library_claim = _claim_of(measurement, d_in, metric, delta)
    audited, notes = _stated(claim, library_claim)
    kind, scalar, bounds, size = _domain_shape(measurement.input_domain)
    base, pairs, pairs_note = _datasets(
        kind, metric, audited, (scalar, bounds, size), d_in, (data, domain, records)
    )
    measure = _type_name(measurement.output_measure)
    label = name or f"opendp/{measure}"
    sampler, how = _sampler(measurement, _converter(kind, scalar), int(batch), label)
    notes = (
        f"OpenDP: output measure {measure} read as {MEASURES[measure]}; input metric {metric} "
        f"at d_in = {d_in!r} read as {_describe(library_claim)}.",
        *notes,
        f"OpenDP: datasets from the input domain {measurement.input_domain}: {pairs_note}.",
        f"OpenDP cannot be seeded: the releases come from its own secure generator, so the "
        f"audit is valid but not reproducible; {how}.",
    )
    return Auditable(label, sampler, audited, base, pairs, library_claim, False, notes)
