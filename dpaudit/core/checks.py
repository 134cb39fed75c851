"""Input checks that raise one clear sentence instead of a trace from inside JAX.

Every public constructor and calibration helper in dpaudit validates concrete
inputs with these functions. They are skipped for JAX tracers (values inside
``jit``), where the caller is responsible for having validated once outside.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np


def is_concrete(value: Any) -> bool:
    """True when ``value`` holds numbers (not a JAX tracer inside ``jit``).

    Args:
        value: anything.

    Returns:
        False for a JAX tracer, True otherwise.
    """
    jax = sys.modules.get("jax")  # no JAX loaded: no value can be a tracer
    return jax is None or not isinstance(value, jax.core.Tracer)


def check_positive(name: str, value: Any) -> None:
    """Raise ``ValueError`` unless every entry of ``value`` is finite and > 0.

    Args:
        name: the name of the input, for the message.
        value: a number or an array (a JAX tracer is not checked).

    Raises:
        ValueError: if an entry is NaN, infinite or <= 0.
    """
    if not is_concrete(value):
        return
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {_show(value)}.")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0, got {_show(value)}.")


def check_epsilon(epsilon: Any) -> None:
    """Raise ``ValueError`` unless epsilon is a finite number > 0.

    Args:
        epsilon: the privacy parameter (a JAX tracer is not checked).

    Raises:
        ValueError: if it is not finite and > 0.
    """
    check_positive("epsilon", epsilon)


def check_delta(delta: Any) -> None:
    """Raise ``ValueError`` unless delta lies strictly between 0 and 1.

    Args:
        delta: the privacy parameter (a JAX tracer is not checked).

    Raises:
        ValueError: if it is not in (0, 1).
    """
    if not is_concrete(delta):
        return
    arr = np.asarray(delta, dtype=float)
    if not np.all(np.isfinite(arr)) or not np.all((arr > 0) & (arr < 1)):
        raise ValueError(f"delta must lie strictly between 0 and 1, got {_show(delta)}.")


def check_finite(name: str, value: Any) -> None:
    """Raise ``ValueError`` if ``value`` contains NaN or infinity.

    Args:
        name: the name of the input, for the message.
        value: a number or an array (a JAX tracer is not checked).

    Raises:
        ValueError: naming how many entries are NaN or infinite.
    """
    if not is_concrete(value):
        return
    arr = np.asarray(value)
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(
            f"{name} contains {bad} NaN or infinite value(s); clean or clip the input first."
        )


def check_last_axis(name: str, value: Any, expected: int, what: str) -> None:
    """Raise ``ValueError`` unless ``value.shape[-1] == expected``.

    Args:
        name: the name of the input, for the message.
        value: an array.
        expected: the required length of its last axis.
        what: what the last axis holds, for the message.

    Raises:
        ValueError: if the last axis is missing or has another length.
    """
    shape = np.shape(value)
    if len(shape) == 0 or shape[-1] != expected:
        raise ValueError(
            f"{name} has shape {tuple(shape)} but its last axis must have length {expected} "
            f"({what})."
        )


def check_finite_number(name: str, value: Any) -> float:
    """``value`` as a float, when it is a finite real number of any sign (not a bool).

    Args:
        name: the name of the input, for the message.
        value: the input.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if it is NaN or infinite.
    """
    value = _real_number(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return value


def check_number(
    name: str, value: Any, *, low: float = 0.0, inclusive: bool = False, hint: str = ""
) -> float:
    """A finite real number ``> low`` (``>= low`` when ``inclusive``); ``TypeError`` if not a number.

    Args:
        name: the name of the input, for the message.
        value: the input.
        low: the lower bound.
        inclusive: accept ``value == low``.
        hint: text appended to the bound in the message.

    Returns:
        ``value`` as a float.

    Raises:
        TypeError: if ``value`` is not a real number (bools are refused).
        ValueError: if it is not finite or not above ``low``.
    """
    value = _real_number(name, value)
    ok = value >= low if inclusive else value > low
    if not (math.isfinite(value) and ok):
        relation = ">=" if inclusive else ">"
        raise ValueError(f"{name} must be a finite number {relation} {low:g}{hint}, got {value!r}.")
    return value


def check_count(name: str, value: Any) -> int:
    """A positive integer (not a bool).

    Args:
        name: the name of the input, for the message.
        value: the input.

    Returns:
        ``value`` as an int.

    Raises:
        ValueError: if it is not an integer >= 1 (bools are refused).
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def check_choice(name: str, value: Any, choices) -> Any:
    """One of ``choices``.

    Args:
        name: the name of the input, for the message.
        value: the input.
        choices: the allowed values.

    Returns:
        ``value`` unchanged.

    Raises:
        ValueError: if ``value`` is not one of ``choices``.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def _real_number(name: str, value: Any) -> float:
    # bools are ints to Python, but a True where a number is expected is a mistake, not 1.0
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}.")
    return float(value)


def _show(value: Any) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        v = float(arr)
        return repr(v) if math.isfinite(v) else str(v)
    return f"an array with min {np.nanmin(arr):.4g} and max {np.nanmax(arr):.4g}"


def check_probability(name: str, value: float, *, allow_zero: bool) -> float:
    """A probability below one (a delta), as a float.

    Args:
        name: how the error message names the value.
        value: a real number.
        allow_zero: whether 0 is allowed.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is outside ``[0, 1)`` (``(0, 1)`` without ``allow_zero``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}.")
    value = float(value)
    low_ok = value >= 0 if allow_zero else value > 0
    if not (math.isfinite(value) and low_ok and value < 1):
        bound = "0 <= delta < 1" if allow_zero else "0 < delta < 1"
        raise ValueError(f"{name} must satisfy {bound}, got {value!r}.")
    return value


def check_release_values(what: str, values: Any, n: int, *, fix: str) -> np.ndarray:
    """``values`` as an array of ``n`` rows of real numbers, none NaN (``±inf`` allowed).

    One check for every entry point that draws releases or features from user code (the
    Python API, a spec, the CLI): complex, NaN or mis-counted rows are refused with one
    sentence. Infinite values pass: a release may be ``±inf`` (an outcome of its own, which
    the black-box audit counts); a caller that needs finite values checks
    :func:`check_finite` as well.

    Args:
        what: what the values are, for the message (e.g. ``"the sampler 'f' releases"``).
        values: the array returned by user code (booleans and integers are fine).
        n: the number of rows asked for.
        fix: what to do, appended to the message.

    Returns:
        ``values`` as a numpy array.

    Raises:
        TypeError: for complex values or values that are not numbers.
        ValueError: for NaN values or a first axis other than ``n``.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":  # complex numbers, strings, Python objects
        raise TypeError(f"{what} are not real numbers (dtype {arr.dtype}); {fix}.")
    if arr.ndim == 0 or arr.shape[0] != n:
        raise ValueError(
            f"{what} have shape {arr.shape} when asked for {n} releases; the first axis must count "
            f"the releases (one row per release), so {fix}."
        )
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{what} contain NaN values; {fix}.")
    return arr


def check_distinct_pair(name: str, data: Any, data_prime: Any) -> None:
    """Raise ``ValueError`` if the two datasets of a pair are equal (nothing to audit).

    Args:
        name: how the message names the pair (e.g. ``"data and data_prime"``).
        data: ``D``.
        data_prime: ``D'``.

    Raises:
        ValueError: if ``D`` and ``D'`` hold the same values (an audit of ``D`` against
            itself can only pass, whatever the mechanism).
    """
    if _same_values(data, data_prime):
        raise ValueError(
            f"{name} are the same dataset; an audit of D against itself always passes: give "
            "two neighbouring datasets that differ (e.g. in one record)."
        )


def _same_values(data: Any, data_prime: Any) -> bool:
    """Whether two datasets (arrays or pytrees of arrays) hold the same values."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(data)
    leaves_prime, tree_prime = jax.tree_util.tree_flatten(data_prime)
    if tree != tree_prime:
        return False
    try:
        for a, b in zip(leaves, leaves_prime, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            if a.dtype.kind == "O" or a.shape != b.shape or not np.array_equal(a, b):
                return False
    except (TypeError, ValueError):  # ragged or exotic data: nothing to compare here
        return False
    return True


def check_finite_parameter(name: str, value: Any) -> None:
    """Raise ``ValueError`` if a numeric parameter is NaN or infinite (``TypeError`` if no number).

    Args:
        name: the parameter, for the message (e.g. ``"GaussianComponent.mu"``).
        value: a number or an array of numbers.

    Raises:
        TypeError: if ``value`` holds something other than real numbers.
        ValueError: if an entry is NaN or infinite.
    """
    try:
        if isinstance(value, str | bytes | bool):  # float("1") and float(True) are not numbers
            raise TypeError
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}.") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {_show(value)}; give a finite value.")


def check_loss_parameter(name: str, value: Any) -> None:
    """Raise unless a privacy-loss parameter (a Gaussian ``mu``, a Laplace ``a``, a supremum)
    is a finite number ``>= 0``: an infinite one would make the accounting never return.

    Args:
        name: the parameter, for the message (e.g. ``"GaussianComponent.mu"``).
        value: a number (a JAX tracer is not checked).

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if it is NaN, infinite or negative.
    """
    if type(value) in (float, int) and 0 <= value < math.inf:  # the common case, fast
        return
    if not is_concrete(value):
        return
    check_finite_parameter(name, value)
    if np.ndim(value) != 0:
        raise TypeError(f"{name} must be one number, got an array of shape {np.shape(value)}.")
    if not float(value) >= 0:
        raise ValueError(f"{name} must be >= 0, got {float(value)!r}; give a finite number >= 0.")
