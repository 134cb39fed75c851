"""JSON conversion of audit records: one rule for non-finite floats everywhere.

JSON has no infinity and no NaN. Every ``to_dict()`` in dpaudit writes
``+inf``/``-inf`` as the strings ``"inf"``/``"-inf"`` (an infinite privacy
loss is a finding, not a missing value) and NaN as ``null`` (no value).

Example:
    >>> from dpaudit.core.serialize import json_float, jsonable
    >>> json_float(float("inf")), json_float(float("nan")), json_float(0.5)
    ('inf', None, 0.5)
    >>> import numpy as np
    >>> jsonable({"a": np.array([1.0, np.inf]), "b": (np.int64(3), None)})
    {'a': [1.0, 'inf'], 'b': [3, None]}
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["json_float", "jsonable"]


def json_float(value):
    """A float as JSON: finite as is, ``+-inf`` as ``"inf"``/``"-inf"``, NaN as ``None``.

    Args:
        value: a number, ``None``, or a string (passed through, already converted).

    Returns:
        A Python float, ``"inf"``, ``"-inf"``, a string given as input, or ``None``.
    """
    if value is None or isinstance(value, str):
        return value
    value = float(value)
    if math.isnan(value):
        return None
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def jsonable(obj):
    """``obj`` with every mapping, array, tuple and number made JSON-able.

    Args:
        obj: nested mappings, sequences, numpy arrays and scalars, strings,
            booleans and ``None``.

    Returns:
        The same structure with dict keys as strings, arrays as flat lists,
        tuples as lists, floats through :func:`json_float`; anything else as
        its ``str``.
    """
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return [json_float(v) for v in obj.reshape(-1)] if obj.ndim else json_float(obj)
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bool | str) or obj is None:
        return obj
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return json_float(obj)
    return str(obj)
