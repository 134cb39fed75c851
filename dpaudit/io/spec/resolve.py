"""Running a spec's code: user callables and array files loaded, mechanisms and samplers built.

This is the one place where a spec executes code: a user's ``file.py`` is
imported, a catalogue builder or a user's builder is called with the spec's
parameters, a plain sampler gets its parameters bound, and the datasets
``(D, D')`` are read from files or made by a generator. Errors are
:class:`SpecError` naming the spec field at fault.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from jax import errors as jax_errors
from jax import tree as jax_tree

from dpaudit.blackbox import as_sampler
from dpaudit.core.checks import check_distinct_pair, check_finite, check_release_values
from dpaudit.core.closures import lift_closure, rebuild_closure
from dpaudit.core.memory import on_release
from dpaudit.io.datasets import generate
from dpaudit.io.spec.load import split_callable_path
from dpaudit.io.spec.schema import AuditSpec, SpecError, field_error
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.parameter_checks import traced_parameters_valid
from dpaudit.model.registry import entry
from dpaudit.model.sites import joint_release

__all__ = [
    "BlackBoxTarget",
    "PublicParameters",
    "SpecSampler",
    "check_dataset",
    "check_model_runs",
    "check_pair_differs",
    "check_sampler_runs",
    "check_sampler_traces",
    "clear_draw_programs",
    "draw_program_count",
    "load_array_file",
    "load_callable",
    "load_pair",
    "resolve_blackbox",
    "resolve_mechanism",
]


def load_callable(spec_path: Path, ref: str, field: str = "mechanism.path"):
    """Import a user's ``file.py`` (once per file) and return its attribute ``callable``.

    Args:
        spec_path: the spec file; a relative ``file.py`` is read from its folder
            (the command line passes ``Path.cwd() / "command-line"``).
        ref: ``"file.py:callable"``.
        field: the spec field holding ``ref``, for the error message.

    Returns:
        The attribute (a Mechanism, a builder, a sampler, ...), not yet checked.

    Raises:
        SpecError: when ``ref`` is malformed, importing the file fails, or the
            file defines no such name.
    """
    file_path, attr = split_callable_path(spec_path, ref, field)
    # one module per file (keyed by its absolute path), so specs sharing a file share its state
    module_name = f"_dpaudit_user_{abs(hash(str(file_path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, file_path)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as err:
            raise field_error(
                spec_path, field, f"importing {file_path.name} failed: {err!r}."
            ) from None
        sys.modules[module_name] = module
    if not hasattr(module, attr):
        raise field_error(spec_path, field, f"{file_path.name} defines no {attr!r}.")
    return getattr(module, attr)


def load_array_file(spec_path: Path, file: Path):
    """One dataset from a ``.npy`` or ``.npz`` file (pickles refused).

    Args:
        spec_path: the spec file, for the error message.
        file: the ``.npy``/``.npz`` file.

    Returns:
        The array of a ``.npy``; the single array of a ``.npz``, or the tuple of
        its arrays (in file order) when it holds several.

    Raises:
        SpecError: when the file cannot be read.
    """
    try:
        loaded = np.load(file, allow_pickle=False)
    except (OSError, ValueError) as err:
        message = str(err).rstrip(".")
        if "allow_pickle" in message:  # numpy's wording names an option dpaudit does not offer
            message = "it holds Python objects (dtype object); save a numeric array"
        raise field_error(spec_path, "data.files", f"cannot read {file.name}: {message}.") from None
    if isinstance(loaded, np.ndarray):
        return check_dataset(spec_path, "data.files", file.name, loaded)
    with loaded:
        arrays = [
            check_dataset(spec_path, "data.files", file.name, loaded[k]) for k in loaded.files
        ]
    if not arrays:
        raise field_error(spec_path, "data.files", f"{file.name} holds no array.")
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def check_dataset(spec_path: Path, field: str, name: str, array) -> np.ndarray:
    """A dataset array checked for what every mechanism needs: real numbers, finite, records.

    Args:
        spec_path: the spec file, for the message.
        field: the field at fault (``"data.files"`` or ``"data"``).
        name: the file or dataset named in the message.
        array: the array read.

    Returns:
        ``array`` as a NumPy array.

    Raises:
        SpecError: for an array of strings, objects or complex numbers, a
            scalar, no records, or a NaN or infinite entry.
    """
    array = np.asarray(array)
    # a mechanism's clip/mean silently reads strings as garbage and complex numbers
    # as their real part, and a NaN record makes D and D' differ "in every record"
    if array.dtype.kind not in "biuf":
        raise field_error(
            spec_path,
            field,
            f"{name} holds {array.dtype} values; save real numbers (float, int or bool).",
        )
    if array.ndim == 0 or array.shape[0] == 0:
        raise field_error(
            spec_path, field, f"{name} holds no records (shape {array.shape}); save one per row."
        )
    if not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise field_error(
            spec_path,
            field,
            f"{name} has a NaN or infinite value at index {tuple(int(i) for i in bad)}; "
            "every entry must be a finite number.",
        )
    return array


def _bind_builder(spec_path: Path, builder, params: Mapping, params_field: str) -> None:
    try:
        inspect.signature(builder).bind(**params)
    except TypeError as err:
        raise field_error(
            spec_path, params_field, f"the builder does not accept these parameters ({err})."
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass


def _build(spec_path: Path, ref: str, params: Mapping, field: str, params_field: str) -> Mechanism:
    """A catalogue builder (``ref`` a name) or a user's ``file.py:callable``, built with ``params``."""
    params = dict(params)
    if ":" not in ref:
        registered = entry(ref)
        builder = registered.builder
        params = {**registered.example, **params}
    else:
        builder = load_callable(spec_path, ref, field)
        if isinstance(builder, Mechanism):
            if params:
                raise field_error(spec_path, params_field, "a Mechanism object takes no params.")
            return builder
        if not callable(builder):
            raise field_error(spec_path, field, f"{ref} is not callable.")
    _bind_builder(spec_path, builder, params, params_field)
    try:
        mechanism = builder(**params)
    except (TypeError, ValueError) as err:
        raise field_error(spec_path, params_field, str(err)) from None
    if not isinstance(mechanism, Mechanism):
        raise field_error(
            spec_path,
            field.rpartition(".")[0] if field.endswith(".path") else field,
            f"the builder returned {type(mechanism).__name__}, not a dpaudit.Mechanism.",
        )
    return mechanism


def resolve_mechanism(spec: AuditSpec) -> Mechanism:
    """Build the spec's mechanism (catalogue builder or the user's callable).

    A user's callable may be a :class:`Mechanism`, or a builder called with
    ``params`` that returns one. For a black-box spec this is the
    ``[mechanism]`` table's model, else the catalogue mechanism sampled
    (``blackbox.mechanism``).

    Args:
        spec: a validated spec.

    Returns:
        The built mechanism, with the builder's own claim (the CLI applies the spec's claim).

    Raises:
        SpecError: when the callable's signature does not accept ``params``,
            it does not produce a Mechanism, or the spec is a black-box spec of
            a plain sampler without a ``[mechanism]`` (use :func:`resolve_blackbox`).
    """
    bb = spec.blackbox
    if bb is None or bb.reference_in_mechanism:
        return _build(spec.path, spec.mechanism, spec.params, "mechanism.path", "mechanism.params")
    if bb.mechanism is None:
        raise field_error(
            spec.path,
            "blackbox.sampler",
            "a plain sampler is not a dpaudit.Mechanism; use resolve_blackbox for black-box specs.",
        )
    return _build(spec.path, bb.mechanism, bb.params, "blackbox.mechanism", "blackbox.params")


@dataclasses.dataclass(frozen=True)
class PublicParameters:
    """What dataset generators read for a plain sampler: a name and public parameters.

    A stand-in for a :class:`~dpaudit.Mechanism` where a generator only reads
    ``name`` and ``params`` (``n``, ``tau``, ...).

    Attributes:
        name: the sampler's (or its reference's) name.
        params: the public parameters.
    """

    name: str
    params: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class BlackBoxTarget:
    """A black-box spec made runnable by :func:`resolve_blackbox`.

    Attributes:
        name: the implementation's name in reports.
        sampler: ``sampler(data, n, key) -> releases`` (``blackbox.params`` bound).
        mechanism: the catalogue :class:`~dpaudit.Mechanism` sampled, or ``None``
            for a plain sampler.
        reference: the reference :class:`~dpaudit.Mechanism`, or ``None``.
        public: what dataset generators read ``n``, ``tau``, ... from: the
            sampled mechanism, else the reference (with ``blackbox.params`` on
            top), else ``blackbox.params``.
    """

    name: str
    sampler: Callable
    mechanism: Mechanism | None
    reference: Mechanism | None
    public: Any


def _bind_sampler(spec: AuditSpec, fn, params: Mapping, name: str) -> Callable:
    if not callable(fn):
        raise field_error(spec.path, "blackbox.sampler", f"{name} is not callable.")
    try:
        inspect.signature(fn).bind(None, 1, None, **params)
    except TypeError as err:
        field = "blackbox.params" if params else "blackbox.sampler"
        raise field_error(
            spec.path,
            field,
            f"the sampler must accept (data, n, key{', **params' if params else ''}) ({err}).",
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    return SpecSampler(
        fn, dict(params), name, (str(Path(spec.path).resolve()), spec.blackbox.sampler)
    )


class SpecSampler:
    """A spec's sampler with its ``blackbox.params`` bound: ``sampler(data, n, key)``.

    It pickles as the spec file and reference it was loaded from, so a helper process
    (:mod:`dpaudit.blackbox.drawhelper`) loads the user's file again instead of looking
    for this process's private module.

    Args:
        fn: the loaded callable ``fn(data, n, key, **params)``.
        params: the bound keyword arguments.
        name: the sampler's name in reports.
        origin: ``(spec path, "file.py:callable")``.
    """

    def __init__(self, fn: Callable, params: dict, name: str, origin: tuple[str, str]):
        self.fn, self.params, self.__name__, self.origin = fn, params, name, origin
        # a per-release sampler's declarations (dpaudit.blackbox.ReleaseSource draws a last,
        # partial chunk at its own size for it, and a host-Python one on the helper process)
        self.prefix_stable = bool(getattr(fn, "prefix_stable", False))
        self.host_python = bool(getattr(fn, "host_python", False))

    def __call__(self, data, n, key):
        return self.fn(data, n, key, **self.params)

    def __reduce__(self):
        return _reload_sampler, (*self.origin, self.params, self.__name__)


def _reload_sampler(spec_path: str, ref: str, params: dict, name: str) -> SpecSampler:
    """The :class:`SpecSampler` of ``ref`` in a fresh process (the pickle of one)."""
    fn = load_callable(Path(spec_path), ref, "blackbox.sampler")
    return SpecSampler(fn, params, name, (spec_path, ref))


def _build_reference(spec: AuditSpec) -> Mechanism | None:
    """The black-box spec's reference model (from ``blackbox.reference`` or ``[mechanism]``)."""
    bb = spec.blackbox
    if bb.reference is None:
        return None
    if bb.reference_in_mechanism:
        field, params_field = "mechanism.path", "mechanism.params"
    else:
        field, params_field = "blackbox.reference", "blackbox.reference_params"
    return _build(spec.path, bb.reference, bb.reference_params, field, params_field)


def resolve_blackbox(spec: AuditSpec) -> BlackBoxTarget:
    """Build a black-box spec's sampler, the catalogue mechanism it samples, and its reference.

    Args:
        spec: a validated black-box spec.

    Returns:
        The runnable :class:`BlackBoxTarget`.

    Raises:
        SpecError: for a white-box spec, a sampler that does not accept
            ``(data, n, key, **params)``, or a builder that rejects its parameters.
    """
    bb = spec.blackbox
    if bb is None:
        raise field_error(spec.path, "blackbox", "not a black-box spec (no [blackbox] table).")
    reference = _build_reference(spec)
    if bb.mechanism is not None:
        mechanism = _build(
            spec.path, bb.mechanism, bb.params, "blackbox.mechanism", "blackbox.params"
        )
        return BlackBoxTarget(bb.mechanism, as_sampler(mechanism), mechanism, reference, mechanism)
    file_path, attr = split_callable_path(spec.path, bb.sampler, "blackbox.sampler")
    name = f"{file_path.name}:{attr}"
    sampler = _bind_sampler(
        spec, load_callable(spec.path, bb.sampler, "blackbox.sampler"), bb.params, name
    )
    if reference is not None:
        public = PublicParameters(reference.name, {**reference.params, **bb.params})
    else:
        public = PublicParameters(name, dict(bb.params))
    return BlackBoxTarget(name, sampler, None, reference, public)


def load_pair(spec: AuditSpec, mechanism):
    """The neighbouring datasets ``(D, D')`` of a spec.

    Args:
        spec: a validated spec.
        mechanism: what a generator reads public parameters from: the
            :class:`~dpaudit.Mechanism`, or :attr:`BlackBoxTarget.public` of a
            black-box spec.

    Returns:
        ``(D, D')``, read from ``[data].files`` or made by ``[data].generator``.

    Raises:
        SpecError: when a file cannot be read or the generator rejects its parameters.
    """
    if spec.files is not None:
        return tuple(load_array_file(spec.path, f) for f in spec.files)
    try:
        return generate(spec.generator, mechanism, seed=spec.seed, **spec.data_params)
    except (TypeError, ValueError) as err:
        raise field_error(spec.path, "data", str(err)) from None


def check_pair_differs(spec: AuditSpec, pair) -> None:
    """Refuse a spec whose ``D`` equals ``D'`` (e.g. one file named twice): it could only pass.

    Skipped for a black-box spec with ``pairs``: its candidates are generated around ``D``.

    Args:
        spec: a validated spec.
        pair: the pair the audit will run on (after ``--pairs worst``).

    Raises:
        SpecError: naming ``data.files`` (or ``data``).
    """
    if spec.blackbox is not None and spec.blackbox.pairs is not None:
        return
    try:
        check_distinct_pair("D and D'", *pair)
    except ValueError as err:
        field = "data.files" if spec.files is not None else "data"
        raise field_error(spec.path, field, str(err)) from None


# a model that fails on the data with one of these is given data it cannot read (wrong
# shape, wrong type) or is itself malformed (numpyro asserts unique site names): input
# to fix, not a crash of dpaudit
_MODEL_INPUT_ERRORS = (TypeError, ValueError, IndexError, AssertionError)


def _model_fails(spec_path: Path, label: str, err: Exception) -> SpecError:
    """The spec error for a model that raises ``err`` on the dataset ``label``."""
    text = str(err).strip().splitlines()
    return field_error(
        spec_path,
        "mechanism",
        f"the model fails on {label} ({type(err).__name__}: {text[0] if text else ''}); "
        "check the data's shape and the model's parameters and site names.",
    )


def _release_not(spec_path: Path, label: str, wanted: str, seen: str) -> SpecError:
    """The spec error for a model whose release on ``label`` is not ``wanted`` (``seen``)."""
    return field_error(
        spec_path,
        "mechanism",
        f"the model draws a release that is not {wanted} on {label} ({seen}); check its "
        "location and scale on these data.",
    )


def check_model_runs(spec_path: Path, mechanism: Mechanism, pair) -> None:
    """Run the model once on ``D`` and ``D'`` before auditing, and draw one release of each.

    Catches, before any audit, what the audit would only meet later as a crash
    or a silent garbage verdict: a duplicate site name, data of the wrong shape
    or type, a parameter a distribution rejects, a release that is NaN, infinite
    or complex. The draw uses its own key: the audit's random numbers are unchanged.

    Both releases are drawn by one compiled program (``jax.jit`` of the draw, the data
    as arguments; one more for a ``D'`` of another shape; shared by the builds of one
    family when the model's numbers can be its arguments), with the parameters numpyro
    cannot check on traced data checked inside it
    (:func:`dpaudit.model.parameter_checks.traced_parameters_valid`). Run op by op,
    the same draw compiled a program per operation (most of the programs ``dpaudit
    audit`` ran before its first audit). When the compiled draw fails in any way, the
    model is run op by op as before, which raises numpyro's own message.

    Args:
        spec_path: the spec file, for the message.
        mechanism: the white-box mechanism (the spec's claim applied).
        pair: ``(D, D')``.

    Raises:
        SpecError: naming ``mechanism``: the model fails on the data or draws
            a release that is not a finite real number.
    """
    if not _compiled_draw_passes(mechanism, pair):
        _check_eager_draw(spec_path, mechanism, pair)


def _release_ok(release: np.ndarray) -> bool:
    """A release of real numbers, all finite."""
    return release.dtype.kind in "biuf" and bool(np.all(np.isfinite(release)))


def _compiled_draw_passes(mechanism: Mechanism, pair) -> bool:
    """Whether one compiled draw on ``D`` and ``D'`` runs, with valid parameters, finite and real.

    ``False`` for anything else, a failure included: :func:`_check_eager_draw` then
    finds and names it (or, for a draw that only fails compiled, passes).
    """
    own = {}  # a model drawn by its own program: one per data signature
    try:
        for data in pair:
            release, valid = _drawn(mechanism, data, own)
            if not (bool(valid) and _release_ok(np.asarray(release))):
                return False
    except Exception:  # any failure: the eager draw below names it (or passes)
        return False
    return True


#: ``{(model description, release sites, signatures): compiled draw}``: one pre-audit draw
#: program per model family and data shape in a process (``make audit`` prepares every spec
#: in one process; tracing and lowering are never cached on disk). At most
#: :data:`_MAX_DRAW_PROGRAMS`; then it starts again. Compiled executables: ``jax.clear_caches``
#: does not reach them, so :func:`dpaudit.core.memory.release_memory` drops them with JAX's
#: programs (:func:`clear_draw_programs` is registered with it), and a suite drops them once
#: every spec is prepared (audits never draw through them).
_DRAW_PROGRAMS: dict = {}
_MAX_DRAW_PROGRAMS = 256


@on_release
def clear_draw_programs() -> None:
    """Drop the pre-audit draw programs shared per model family (as ``jax.clear_caches``
    drops JAX's own): the next draw of each family compiles again."""
    _DRAW_PROGRAMS.clear()


def draw_program_count() -> int:
    """How many pre-audit draw programs this process holds (see :func:`clear_draw_programs`).

    Returns:
        The number of kept programs (families and data shapes drawn since the last clear).
    """
    return len(_DRAW_PROGRAMS)


def _draw(model, release_sites, name: str, data):
    """One release of ``model`` on ``data`` (key 0) and whether its traced parameters are valid."""
    import jax

    key = jax.random.PRNGKey(0)  # inside the program: no program of its own
    release = joint_release(model, data, release_sites, name).sample(key)
    return release, traced_parameters_valid(model, data, key)


def _drawn(mechanism: Mechanism, data, own: dict):
    """``(release, valid)`` of the pre-audit draw on ``data``, by a program shared per family.

    The model's closed-over numbers are arguments of the program
    (:func:`dpaudit.core.closures.lift_closure`, as for a joint release's density), so two
    builds of one family (another epsilon, a faulty variant) on data of one shape trace,
    lower and compile one draw, where each mechanism traced and lowered its own (~0.25 s
    each, warm). A model that does not trace with its numbers as tracers (a Python branch
    on one) is drawn by a program of its own, closed over, as before (kept in ``own`` per
    data signature).
    """
    import jax

    sites, name = mechanism.release_sites, mechanism.name
    lifted = lift_closure(mechanism.model)
    if lifted is not None:
        description, numbers = lifted
        key = (description, sites, _signature(numbers), _signature(data))
        if key not in _DRAW_PROGRAMS:
            if len(_DRAW_PROGRAMS) >= _MAX_DRAW_PROGRAMS:
                _DRAW_PROGRAMS.clear()
            try:
                program = jax.jit(
                    lambda values, d: _draw(rebuild_closure(description, values), sites, name, d)
                )
                _DRAW_PROGRAMS[key] = program.lower(numbers, data).compile(
                    compiler_options=_ONE_RUN
                )
            except Exception:  # the numbers cannot be tracers: this model's own program
                _DRAW_PROGRAMS[key] = None
        if _DRAW_PROGRAMS[key] is not None:
            return _DRAW_PROGRAMS[key](numbers, data)
    signature = _signature(data)
    if signature not in own:
        program = jax.jit(lambda d: _draw(mechanism.model, sites, name, d))
        own[signature] = program.lower(data).compile(compiler_options=_ONE_RUN)
    return own[signature](data)


#: The pre-audit draw runs once: XLA's CPU backend without LLVM optimisation compiles it
#: in 0.4-0.6 of the time (laplace-mean 0.19 -> 0.12 s, dpsgd-logistic 2.5 -> 1.05 s).
_ONE_RUN = {"xla_backend_optimization_level": 0}


def _signature(data) -> tuple:
    """What a compiled program of ``data`` depends on: its tree, leaf shapes and types."""
    leaves, tree = jax_tree.flatten(data)
    return tree, tuple((np.shape(x), np.result_type(x)) for x in leaves)


def _check_eager_draw(spec_path: Path, mechanism: Mechanism, pair) -> None:
    """:func:`check_model_runs` op by op: numpyro's own messages for what fails."""
    import jax

    for label, data in zip(("D", "D'"), pair, strict=True):
        try:
            release = np.asarray(mechanism.sample(data, jax.random.PRNGKey(0)))
        except _MODEL_INPUT_ERRORS as err:
            raise _model_fails(spec_path, label, err) from None
        if not _release_ok(release):
            seen = f"dtype {release.dtype}, e.g. {release.ravel()[:3]}"
            raise _release_not(spec_path, label, "a finite real number", seen)


#: A model that converts its data to numpy or branches on its values cannot be traced.
_NEEDS_VALUES = (
    jax_errors.ConcretizationTypeError,
    jax_errors.TracerArrayConversionError,
    jax_errors.TracerBoolConversionError,
    jax_errors.TracerIntegerConversionError,
)


def check_model_traces(spec_path: Path, mechanism: Mechanism, pair) -> None:
    """Trace the model on ``D`` and ``D'`` abstractly: :func:`check_model_runs` without running it.

    ``dpaudit validate`` builds every spec and audits none; tracing (``jax.eval_shape``)
    compiles no XLA program, yet catches a duplicate site name, data of the wrong shape or
    type, and a release that is not real. A model that reads its data's values (converts
    them to numpy, branches on them) is run as :func:`check_model_runs` does. The model is
    traced once per signature of the data, with the data abstract (a ``D'`` shaped as ``D``
    shares ``D``'s trace); only when that fails is each dataset traced with its values, as
    before, to name what fails. What only a draw shows (a NaN or infinite
    release, a parameter a distribution rejects on these values) is left to
    :func:`check_model_runs` when the audit starts.

    Args:
        spec_path: the spec file, for the message.
        mechanism: the white-box mechanism (the spec's claim applied).
        pair: ``(D, D')``.

    Raises:
        SpecError: naming ``mechanism``: the model fails on the data, or its release
            is not real.
    """
    import jax

    key = jax.ShapeDtypeStruct((2,), np.uint32)  # a PRNGKey(0), abstract: nothing runs
    releases = _traced_on_abstract_data(lambda k, d: mechanism.sample(d, k), key, pair)
    if releases is not None and all(np.dtype(r.dtype).kind in "biuf" for r in releases):
        return None
    for label, data in zip(("D", "D'"), pair, strict=True):
        try:
            release = jax.eval_shape(lambda k, d=data: mechanism.sample(d, k), key)
        except _NEEDS_VALUES:  # a model that reads its data's values (numpy): run it
            return check_model_runs(spec_path, mechanism, pair)
        except _MODEL_INPUT_ERRORS as err:
            raise _model_fails(spec_path, label, err) from None
        if np.dtype(release.dtype).kind not in "biuf":
            raise _release_not(spec_path, label, "a real number", f"dtype {release.dtype}")


def _traced_on_abstract_data(draw: Callable, key, pair) -> list | None:
    """The release shapes of ``draw(key, D)`` and ``draw(key, D')``, traced with the data abstract.

    One trace per signature (tree, shapes, dtypes) of the data: a ``D'`` shaped as ``D``
    reuses ``D``'s trace, so a model is traced once per spec, not once per dataset. A trace
    on abstract data depends on nothing but the signature; a model that reads its data's
    values (or any other failure) gives ``None``, and the caller traces each dataset with
    its values, as before, which names what fails in the same words.
    """
    import jax

    traced = {}
    try:
        for data in pair:
            signature = _signature(data)
            if signature not in traced:
                traced[signature] = jax.eval_shape(draw, key, data)
    except Exception:  # values needed, or a failure to name: the caller's concrete traces
        return None
    return [traced[_signature(data)] for data in pair]


def check_sampler_runs(spec: AuditSpec, sampler: Callable, features, pair) -> None:
    """Draw two releases of ``D`` and ``D'`` from a black-box spec's sampler before auditing.

    A sampler giving complex, NaN or mis-shaped releases (or features with a
    row count other than the releases') would otherwise be audited silently
    into ``epsilon_lower = 0``. The draw uses its own key: the audit's random
    numbers are unchanged (for a sampler that uses its key, as required).

    Args:
        spec: the black-box spec, for the message.
        sampler: ``sampler(data, n, key) -> releases``.
        features: the classifier features (``releases -> rows``) or ``None``.
        pair: ``(D, D')``.

    Raises:
        SpecError: naming the sampler's field (or ``blackbox.features``).
    """
    import jax

    field = "blackbox.sampler" if spec.blackbox.sampler else "blackbox.mechanism"
    for label, data in zip(("D", "D'"), pair, strict=True):
        try:
            releases = np.asarray(sampler(data, 2, jax.random.key(0)))
        except _MODEL_INPUT_ERRORS as err:
            text = str(err).strip().splitlines()
            raise field_error(
                spec.path,
                field,
                f"drawing 2 releases of {label} fails ({type(err).__name__}: "
                f"{text[0] if text else ''}); check the data's shape and the sampler's params.",
            ) from None
        _check_rows(spec.path, field, f"the releases of {label}", releases, categorical=True)
        if features is not None:
            rows = np.asarray(features(releases))
            _check_rows(spec.path, "blackbox.features", f"the features of {label}", rows)


def check_sampler_traces(spec: AuditSpec, mechanism: Mechanism, features, pair) -> None:
    """:func:`check_sampler_runs` for a catalogue mechanism sampled as a black box, traced.

    ``dpaudit validate`` builds every spec and audits none: the two releases of ``D`` and
    ``D'`` are traced abstractly (``jax.eval_shape``, no XLA program) and their shape and
    dtype checked as :func:`check_sampler_runs` checks drawn releases, and so are the
    features' rows. What only values show (a NaN release, a non-finite feature) is left to
    :func:`check_sampler_runs` when the audit starts. A model that reads its data's values
    is drawn from as :func:`check_sampler_runs` does. A plain sampler (user code, often
    numpy) is not traced: its draws are checked by :func:`check_sampler_runs`.

    Args:
        spec: the black-box spec, for the message.
        mechanism: the catalogue mechanism the spec samples (``blackbox.mechanism``).
        features: the classifier features (``releases -> rows``) or ``None``.
        pair: ``(D, D')``.

    Raises:
        SpecError: naming ``blackbox.mechanism`` (or ``blackbox.features``).
    """
    import jax

    sampler = as_sampler(mechanism)
    key = jax.eval_shape(lambda: jax.random.key(0))  # abstract: nothing runs
    shapes = _traced_on_abstract_data(lambda k, d: sampler(d, 2, k), key, pair)
    for index, (label, data) in enumerate(zip(("D", "D'"), pair, strict=True)):
        try:
            if shapes is not None:  # traced once per signature of the data
                shape = shapes[index]
            else:
                shape = jax.eval_shape(lambda k, d=data: sampler(d, 2, k), key)
        except _NEEDS_VALUES:  # a model that reads its data's values (numpy): draw from it
            return check_sampler_runs(spec, sampler, features, pair)
        except _MODEL_INPUT_ERRORS as err:
            text = str(err).strip().splitlines()
            raise field_error(
                spec.path,
                "blackbox.mechanism",
                f"drawing 2 releases of {label} fails ({type(err).__name__}: "
                f"{text[0] if text else ''}); check the data's shape and the sampler's params.",
            ) from None
        releases = np.zeros(shape.shape, shape.dtype)  # the traced shape and dtype, values 0
        _check_rows(spec.path, "blackbox.mechanism", f"the releases of {label}", releases, True)
        if features is not None:
            rows = jax.eval_shape(features, jax.ShapeDtypeStruct(shape.shape, shape.dtype))
            rows = np.zeros(rows.shape, rows.dtype)
            _check_rows(spec.path, "blackbox.features", f"the features of {label}", rows)


def _check_rows(
    spec_path: Path, field: str, what: str, rows: np.ndarray, categorical: bool = False
) -> None:
    """Two rows of real numbers (what a sampler or features must give for n = 2).

    The checks are :func:`dpaudit.core.checks.check_release_values`, the ones the engine
    applies to every chunk: releases may be ``+-inf`` (an outcome the audit counts), features
    must be finite. With ``categorical``, rows of strings or Python objects pass too: a
    sampler's labels (``"yes"``/``"no"``), which :func:`dpaudit.blackbox_audit` maps to
    category indices.
    """
    if categorical and rows.dtype.kind in "OUS":
        return  # labels: the black-box engine numbers them in order of first sight
    fix = (
        "every release must be a real number (+-inf counts as an outcome)"
        if categorical
        else "features must be finite real numbers"
    )
    try:
        check_release_values(what, rows, 2, fix=fix)
        if not categorical:
            check_finite(what, rows)
    except (TypeError, ValueError) as err:
        raise field_error(spec_path, field, str(err)) from None
