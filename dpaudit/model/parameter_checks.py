"""numpyro's checks of constant distribution parameters, evaluated on the host in numpy.

numpyro checks a distribution's parameters against their constraints when it is built
(``Distribution.validate_args``): ``Laplace(0.0, -1.0)`` raises "invalid scale". It
evaluates the constraints with ``jax.numpy`` on concrete values, eagerly, even while a
model is traced (``jax.ensure_compile_time_eval``): every operation on every new shape
compiles a small XLA program. ``dpaudit validate`` builds and traces every spec's mechanism
and audits none, so these checks were most of the programs it ran.

:func:`host_parameter_checks` makes the same checks on host copies of the same values
(numpy; numpyro's constraints accept numpy arrays and answer in numpy): the same
parameters are refused with the same message, and no program is compiled. A parameter
that depends on the traced data is a tracer: it is skipped, as numpyro skips it; a
constraint that cannot be evaluated in numpy is evaluated as numpyro does.
"""

from __future__ import annotations

import contextlib
import threading

import jax
import numpy as np
from numpyro.distributions import constraints
from numpyro.distributions.distribution import Distribution

__all__ = ["host_parameter_checks", "host_validate_args"]

_LOCK = threading.Lock()
_DEPTH = [0]
_NUMPYRO_VALIDATE_ARGS = Distribution.validate_args


def _satisfied(constraint, value) -> np.ndarray:
    """``constraint(value)`` for a concrete ``value``, in numpy where numpyro allows it.

    ``independent`` is unwrapped here (numpyro's reduces its base's answer with
    ``jax.numpy``, a program per shape); every other constraint is called on a numpy copy.
    """
    if isinstance(constraint, constraints.independent):
        result = np.asarray(_satisfied(constraint.base_constraint, value))
        ndims = constraint.reinterpreted_batch_ndims
        if ndims == 0:
            return result
        if result.ndim < ndims:
            raise ValueError(
                f"Expected value.dim() >= {constraint.event_dim} but got {np.ndim(value)}"
            )
        return result.reshape((*result.shape[: result.ndim - ndims], -1)).all(-1)
    return constraint(np.asarray(value))


def host_validate_args(self: Distribution, strict: bool = True) -> None:
    """numpyro's ``Distribution.validate_args``, with constant parameters checked in numpy.

    Args:
        self: the distribution.
        strict: as numpyro's: a parameter that is not concrete (traced) raises
            ``RuntimeError`` when ``True``, and is skipped when ``False`` (what numpyro's
            constructors ask).

    Raises:
        ValueError: "<Class> distribution got invalid <param> parameter." for a concrete
            parameter outside its constraint (numpyro's message).
        RuntimeError: a traced parameter under ``strict=True``.
    """
    for param, value in self.get_args().items():
        constraint = self.arg_constraints[param]
        if constraints.is_dependent(constraint):
            continue  # numpyro: constraints that cannot be checked
        if isinstance(value, jax.core.Tracer):  # depends on traced data: numpyro skips it
            if strict:
                raise RuntimeError("Cannot validate arguments inside jitted code.")
            continue
        try:
            with jax.ensure_compile_time_eval():
                is_valid = _satisfied(constraint, value)
        except (TypeError, AttributeError):  # not a numpy-able value: numpyro's own way
            with jax.ensure_compile_time_eval():
                is_valid = constraint(value)
        if not np.all(is_valid):
            raise ValueError(f"{type(self).__name__} distribution got invalid {param} parameter.")


@contextlib.contextmanager
def host_parameter_checks():
    """Within the block, numpyro checks constant distribution parameters in numpy.

    Distributions built inside the block (by a catalogue builder, or while a model is
    traced) refuse the same parameters as outside it, with the same message, but compile
    no XLA program for the check. Re-entrant; restores numpyro's method on exit.

    Yields:
        ``None``.
    """
    with _LOCK:
        _DEPTH[0] += 1
        Distribution.validate_args = host_validate_args
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                Distribution.validate_args = _NUMPYRO_VALIDATE_ARGS
