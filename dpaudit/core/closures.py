"""A function's closed-over numbers as pytree leaves: one program per function and shape.

A mechanism's model is usually a closure made by its builder around the law's constants
(noise scales, grids). Kept whole as static structure of a ``jit`` argument, every build
is a new function object, so a second audit of the same family (another epsilon, a faulty
variant) matches no cached program and traces, lowers and compiles its programs again.
:func:`lift_closure` splits a function into a hashable description (its code, globals and
the *kind* of each closed-over value) and the leaves (its floating-point numbers and
arrays); :func:`rebuild_closure` makes the same function around other leaves (tracers
inside ``jit``). Two builds of one family with other numbers then share one description.

What becomes a leaf: Python floats (passed to ``jit`` they are weakly typed, as the
literal they replace) and NumPy floating scalars, inside tuples and lists, and the same
inside closed-over plain functions, keyword defaults and the function's attributes
(recursively). Arrays stay in the description by
value, bit for bit (builders check grids with NumPy in the model, which a tracer refuses;
an array equal in every bit is the same constant). Integers, strings, booleans and
``None`` stay in the description (they usually decide shapes and loops). Any other object
stays there by identity (never by equality: a builder's object may hold numbers that
decide the law), so such a function still matches only itself.
"""

from __future__ import annotations

import types

import jax
import numpy as np

__all__ = ["lift_closure", "rebuild_closure"]

#: Closures nested deeper than this are kept by identity (and a self-reference ends here).
_MAX_DEPTH = 4
_CONSTANTS = (int, str, bytes, bool, type(None))


class _ById:
    """A value kept in a description by identity (compared with ``is``, hashed by ``id``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _ById) and other.value is self.value

    def __hash__(self):
        return id(self.value)


class _ByValue:
    """An array kept in a description by value (dtype, shape and bytes, bit for bit)."""

    __slots__ = ("key", "value")

    def __init__(self, value):
        host = np.asarray(value)  # a transfer, no program
        self.value, self.key = value, (host.dtype.str, host.shape, host.tobytes())

    def __eq__(self, other):
        return isinstance(other, _ByValue) and other.key == self.key

    def __hash__(self):
        return hash(self.key)


def _is_leaf(value) -> bool:
    return isinstance(value, float | np.floating) and not isinstance(value, bool)


def _describe(value, leaves: list, depth: int):
    """The description of one closed-over value; its leaves are appended to ``leaves``."""
    if _is_leaf(value):
        leaves.append(value)
        return ("leaf",)
    if isinstance(value, _CONSTANTS):
        return ("const", type(value), value)
    if isinstance(value, np.ndarray | jax.Array):
        return ("array", _ByValue(value))
    if type(value) in (tuple, list):
        return (type(value).__name__, tuple(_describe(v, leaves, depth) for v in value))
    if isinstance(value, types.FunctionType) and value.__closure__ and depth < _MAX_DEPTH:
        described = _describe_function(value, leaves, depth + 1)
        if described is not None:
            return ("function", described)
    return ("object", _ById(value))


def _describe_function(fn: types.FunctionType, leaves: list, depth: int):
    mark = len(leaves)
    try:
        cells = tuple(_describe(c.cell_contents, leaves, depth) for c in fn.__closure__ or ())
    except ValueError:  # an empty cell (a variable assigned after the function was made)
        del leaves[mark:]
        return None
    defaults = _describe(fn.__defaults__, leaves, depth) if fn.__defaults__ else None
    # Keyword defaults and attributes (a model's host hooks, e.g. privacy_accounting with
    # its keyword-only discretization) are described by the same rules and set again on
    # the rebuilt function: kept by identity, every build of a model carrying such hooks
    # was a new program (faulty/hrw-bandwidth-budget-ignored after its catalogue entry).
    keywords = _describe_items(fn.__kwdefaults__ or {}, leaves, depth)
    attributes = _describe_items(vars(fn), leaves, depth)
    return (fn.__code__, _ById(fn.__globals__), fn.__name__, defaults, cells, keywords, attributes)


def _describe_items(mapping: dict, leaves: list, depth: int) -> tuple:
    """``((name, description), ...)`` of a mapping's values, in name order."""
    return tuple((k, _describe(v, leaves, depth)) for k, v in sorted(mapping.items()))


def lift_closure(fn) -> tuple | None:
    """Split a function into a hashable description and its closed-over numbers.

    Args:
        fn: the function (a closure made by a builder).

    Returns:
        ``(description, leaves)``: equal descriptions for two closures of the same code
        whose closed-over values differ only in numbers; or ``None`` when ``fn`` is not
        a plain Python function with closed-over values (keep it whole).
    """
    if not isinstance(fn, types.FunctionType) or not fn.__closure__:
        return None
    leaves: list = []
    described = _describe_function(fn, leaves, 0)
    if described is None or not leaves:
        return None
    return described, tuple(leaves)


def _rebuild(description, leaves):
    kind = description[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "const":
        return description[2]
    if kind in ("object", "array"):
        return description[1].value
    if kind in ("tuple", "list"):
        values = [_rebuild(d, leaves) for d in description[1]]
        return tuple(values) if kind == "tuple" else values
    return _rebuild_function(description[1], leaves)


def _rebuild_function(described, leaves):
    code, globals_, name, defaults, cells, keywords, attributes = described
    closure = tuple(types.CellType(_rebuild(c, leaves)) for c in cells)
    default_values = _rebuild(defaults, leaves) if defaults is not None else None
    fn = types.FunctionType(code, globals_.value, name, default_values, closure)
    if keywords:
        fn.__kwdefaults__ = {key: _rebuild(value, leaves) for key, value in keywords}
    for key, value in attributes:
        setattr(fn, key, _rebuild(value, leaves))
    return fn


def rebuild_closure(description, leaves):
    """The function of :func:`lift_closure`'s description around the given leaves.

    Args:
        description: the description :func:`lift_closure` returned.
        leaves: as many leaves as it returned, in its order (tracers inside ``jit``).

    Returns:
        A new function with the same code, globals and closed-over structure.

    Raises:
        ValueError: when the number of leaves does not match the description; pass the
            leaves :func:`lift_closure` returned (or values of the same structure).
    """
    remaining = iter(leaves)
    try:
        fn = _rebuild_function(description, remaining)
    except StopIteration:
        fn = None
    if fn is None or next(remaining, remaining) is not remaining:
        raise ValueError("leaves does not match the description; pass lift_closure's leaves.")
    return fn
