"""diffprivlib tools and models audited as they are: seeded through ``random_state``, (X, y) data.

:func:`from_diffprivlib` turns a diffprivlib model (``models.GaussianNB``,
``models.LogisticRegression``, any estimator with ``epsilon`` and ``fit``) or tool
(``tools.mean``, ``tools.var``, ``tools.histogram``, ...) into an
:class:`~dpaudit.adapters.Auditable`:

* **randomness**: diffprivlib takes ``random_state`` (an integer or a legacy
  ``RandomState``); each release gets an integer seed drawn from the audit's key
  (:func:`~dpaudit.blackbox.per_call` with ``seed="int"``), so runs are reproducible
  from the audit's seed with no hand-written bridge;
* **the release** of a model is its fitted parameters as one vector, in a fixed order
  (:func:`model_parameters`: ``theta_``, ``var_``, ``class_count_`` of ``GaussianNB``;
  ``coef_``, ``intercept_`` of ``LogisticRegression``): the classifier statistic of the
  black-box engine then has power on the whole model, not on one prediction. A tool's
  release is its output (the counts of ``histogram``);
* **the claim** is the object's own ``epsilon`` (and ``delta`` when it has one) under
  replace-one adjacency (diffprivlib's models and ``mean``/``var``/``std`` take the
  number of records as public), except ``histogram``/``histogramdd``/``count_nonzero``,
  whose noise is calibrated for one record added or removed;
* **the neighbours**: :class:`~dpaudit.blackbox.AutoPairs` around the data, in the box
  the object declares (``bounds`` of a model or tool, ``range`` of a histogram,
  ``data_norm`` of ``LogisticRegression``: each coordinate in
  ``[-data_norm / sqrt(d), data_norm / sqrt(d)]``, whose corners have norm ``data_norm``)
  or ``domain=``; ``(X, y)`` data get labelled pairs (every corner with every label).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import warnings
from collections.abc import Callable

import numpy as np

from dpaudit.adapters.auditable import Auditable
from dpaudit.blackbox import AutoPairs, per_call
from dpaudit.core.threads import one_blas_thread
from dpaudit.model.claims import Claim

__all__ = ["from_diffprivlib", "model_parameters"]

#: Tools whose noise is calibrated for one record added or removed (the rest: replaced).
ADD_REMOVE_TOOLS = ("histogram", "histogramdd", "histogram2d", "count_nonzero")


@contextlib.contextmanager
def _quiet():
    """diffprivlib's own warnings (privacy leaks it already reports, deprecations) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def model_parameters(model) -> np.ndarray:
    """A fitted model's parameters as one vector: its numeric fitted attributes, by name.

    Args:
        model: a fitted estimator (attributes ending in ``_``, as scikit-learn names them).

    Returns:
        The floating-point arrays among them (``theta_``, ``var_``, ``coef_``, ...; not
        ``classes_`` or counts of features), concatenated in the order of their names.

    Raises:
        ValueError: when the model has no fitted floating-point attribute.
    """
    parts = []
    for name in sorted(vars(model)):
        value = getattr(model, name)
        if name.endswith("_") and not name.startswith("_") and name != "epsilon_":
            array = np.asarray(value) if isinstance(value, np.ndarray | float) else None
            if array is not None and array.dtype.kind == "f":
                parts.append(array.ravel())
    if not parts:
        raise ValueError(
            f"{type(model).__name__} has no fitted floating-point parameters (attributes "
            "ending in '_'); fit it once to check it releases a model."
        )
    return np.concatenate(parts)


def _is_model(obj) -> bool:
    return hasattr(obj, "fit") and hasattr(obj, "get_params") and not inspect.isclass(obj)


def _claim(epsilon, delta, adjacency: str, what: str) -> Claim:
    if epsilon is None or (isinstance(epsilon, float) and math.isinf(epsilon)):
        raise ValueError(
            f"{what} states no finite epsilon: set epsilon= on it (diffprivlib's default "
            "for some objects is 1.0; an infinite epsilon claims nothing)."
        )
    return Claim(
        epsilon=float(epsilon),
        delta=float(delta or 0.0),
        adjacency=adjacency,
        reference=f"diffprivlib: {what}'s epsilon",
    )


def _model_domain(model, n_features: int, domain):
    if domain is not None:
        return tuple(domain)
    bounds = getattr(model, "bounds", None)
    if bounds is not None:
        return tuple(bounds)
    norm = getattr(model, "data_norm", None)
    if norm is not None:
        side = float(norm) / math.sqrt(n_features)
        return (-side, side)
    raise ValueError(
        f"{type(model).__name__} declares no bounds or data_norm: pass domain=(lo, hi), the "
        "values a feature may take (diffprivlib would otherwise take them from the data, "
        "which is not private)."
    )


def _from_model(model, data, domain, labels, name):
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError(
            f"a diffprivlib model is audited on data=(X, y), features and labels; got "
            f"{type(data).__name__}."
        )
    x, y = np.asarray(data[0], dtype=float), np.asarray(data[1])
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(
            f"data=(X, y) needs X of shape (n, d) and one label per row, got X {x.shape} and "
            f"y {y.shape}."
        )
    from sklearn.base import clone

    box = _model_domain(model, x.shape[1], domain)
    claim = _claim(model.epsilon, getattr(model, "delta", 0.0), "replace-one", type(model).__name__)

    def release(dataset, seed: int):
        fitted = clone(model).set_params(random_state=seed)
        # one BLAS thread: a refit is small algebra (L-BFGS-B on a few parameters), 163 ->
        # 6.6 ms on a loaded 2-core machine (benchmarks/diffprivlib_refit_threads.py)
        with _quiet(), one_blas_thread():
            fitted.fit(np.asarray(dataset[0], dtype=float), np.asarray(dataset[1]))
        return model_parameters(fitted)

    label = name or f"diffprivlib/{type(model).__name__}"
    pairs = AutoPairs(kind="labelled", domain=box, labels=labels)
    note = (
        f"diffprivlib: {type(model).__name__} refitted per release with an integer "
        f"random_state from the audit's key; its release is its fitted parameters "
        f"({', '.join(_parameter_names(model, x, y))}) as one vector; labelled neighbours in "
        f"the box [{box[0]:g}, {box[1]:g}] per feature."
    )
    sampler = per_call(release, seed="int", name=label)
    return Auditable(label, sampler, claim, (x, y), pairs, claim, True, (note,))


def _parameter_names(model, x, y) -> list[str]:
    from sklearn.base import clone

    with _quiet():
        fitted = clone(model).set_params(random_state=0).fit(x, y)
    return [
        n
        for n in sorted(vars(fitted))
        if n.endswith("_")
        and not n.startswith("_")
        and n != "epsilon_"
        and isinstance(getattr(fitted, n), np.ndarray | float)
        and np.asarray(getattr(fitted, n)).dtype.kind == "f"
    ]


def _tool_domain(tool_name: str, kwargs: dict, domain):
    if domain is not None:
        return tuple(domain)
    for key in ("bounds", "range"):
        if kwargs.get(key) is not None:
            return tuple(kwargs[key])
    raise ValueError(
        f"tools.{tool_name} was given no bounds= (or range=): pass them (diffprivlib would "
        "take them from the data, which leaks it) or domain=(lo, hi) for the neighbours."
    )


def _from_tool(tool: Callable, data, kwargs: dict, domain, name):
    tool_name = getattr(tool, "__name__", type(tool).__name__)
    if "epsilon" not in kwargs:
        raise ValueError(f"tools.{tool_name} needs epsilon= among the keyword arguments.")
    adjacency = "add-remove" if tool_name in ADD_REMOVE_TOOLS else "replace-one"
    claim = _claim(kwargs["epsilon"], kwargs.get("delta"), adjacency, f"tools.{tool_name}")
    box = _tool_domain(tool_name, kwargs, domain)
    accepts_accountant = "accountant" in inspect.signature(tool).parameters

    def release(dataset, seed: int):
        extra = {"random_state": seed}
        if accepts_accountant:  # a fresh accountant per call: the default one keeps every spend
            from diffprivlib import BudgetAccountant

            extra["accountant"] = BudgetAccountant()
        with _quiet():
            out = tool(np.asarray(dataset, dtype=float), **kwargs, **extra)
        return out[0] if isinstance(out, tuple) else out  # histogram: (counts, edges)

    label = name or f"diffprivlib/tools.{tool_name}"
    note = (
        f"diffprivlib: tools.{tool_name} called per release with an integer random_state from "
        f"the audit's key; {adjacency} neighbours of records in [{box[0]:g}, {box[1]:g}]."
    )
    sampler = per_call(release, seed="int", name=label)
    pairs = AutoPairs(kind="records", domain=box)
    return Auditable(
        label, sampler, claim, np.asarray(data, dtype=float), pairs, claim, True, (note,)
    )


def from_diffprivlib(
    obj,
    data,
    *,
    domain: tuple | None = None,
    labels: tuple | None = None,
    name: str | None = None,
    **tool_kwargs,
) -> Auditable:
    """A diffprivlib model or tool as an :class:`~dpaudit.adapters.Auditable` (see the module).

    Args:
        obj: an unfitted diffprivlib estimator (``models.GaussianNB(epsilon=..., bounds=...)``)
            or a tool function (``tools.mean``); its ``random_state`` is set per release.
        data: ``(X, y)`` for a model; the records for a tool.
        domain: ``(lo, hi)`` of a record's values, when the object declares no bounds.
        labels: the label set of the labelled neighbours (default the labels in ``y``).
        name: the name in reports.
        **tool_kwargs: a tool's keyword arguments (``epsilon``, ``bounds``, ``bins``, ...).

    Returns:
        The :class:`~dpaudit.adapters.Auditable` (``.audit(samples=...)`` runs the audit).

    Raises:
        TypeError: for an object that is neither a model nor a tool, model data that are
            not ``(X, y)``, or tool keywords given with a model.
        ValueError: for a missing epsilon, data of the wrong shape, or no bounds to build
            neighbours in.
    """
    if _is_model(obj):
        if tool_kwargs:
            raise TypeError(
                f"set a model's parameters on the model, not here: got {sorted(tool_kwargs)}."
            )
        return _from_model(obj, data, domain, labels, name)
    if callable(obj) and not inspect.isclass(obj):
        return _from_tool(obj, data, tool_kwargs, domain, name)
    raise TypeError(
        f"from_diffprivlib needs a diffprivlib model instance or tool function, got "
        f"{obj!r}; build the model first (e.g. models.GaussianNB(epsilon=1, bounds=(0, 1)))."
    )
