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

:func:`traced_parameters_valid` is the other half, for a model traced with its data as
arguments of one compiled program (the pre-audit draw,
:func:`dpaudit.io.spec.resolve.check_model_runs`): the parameters numpyro skips there
(tracers) are checked inside the program, which answers whether all of them are valid.
"""

from __future__ import annotations

import contextlib
import threading

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions import constraints
from numpyro.distributions.distribution import Distribution

__all__ = ["host_parameter_checks", "host_validate_args", "traced_parameters_valid"]

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


def _distributions(fn: Distribution):
    """``fn`` and every distribution it holds (base distributions, mixture components)."""
    seen, stack = set(), [fn]
    while stack:
        item = stack.pop()
        if id(item) in seen or not isinstance(item, Distribution):
            continue
        seen.add(id(item))
        yield item
        for value in vars(item).values():
            stack.extend(value if isinstance(value, list | tuple) else (value,))


def _traced_valid(d: Distribution) -> list:
    """Whether each traced parameter of ``d`` is inside its constraint (traced booleans)."""
    flags = []
    for param, value in d.get_args().items():
        constraint = d.arg_constraints.get(param)
        if constraint is None or constraints.is_dependent(constraint):
            continue
        if isinstance(value, jax.core.Tracer):
            flags.append(jnp.all(constraint(value)))
    return flags


def traced_parameters_valid(model, data, key) -> jax.Array:
    """Inside a traced function: the parameters numpyro could not check are all valid.

    numpyro checks a distribution's parameters when it is built, but skips those that
    are tracers (they depend on traced data). Tracing ``model(data)`` again, this checks
    them inside the program, for every sample site whose distribution asks for checks
    (``validate_args``), and the distributions it holds.

    Args:
        model: a numpyro model ``model(data)``.
        data: the dataset (traced).
        key: a JAX PRNG key for the model's own draws.

    Returns:
        A boolean scalar: ``True`` when every traced parameter is inside its constraint.
    """
    trace = handlers.trace(handlers.seed(model, rng_seed=key)).get_trace(data)
    flags = [jnp.asarray(True)]
    for site in trace.values():
        if site["type"] != "sample":
            continue
        for d in _distributions(site["fn"]):
            if getattr(d, "_validate_args", False):
                flags.extend(_traced_valid(d))
    return jnp.all(jnp.stack([jnp.asarray(f, bool) for f in flags]))
