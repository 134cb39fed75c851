"""Declarative audit specs (TOML): what to audit, against which claim, on which data.

A spec file (documented in ``audits/README.md``)::

    name = "iclp-qr-mean"            # optional; defaults to the file name
    expected = "pass"                # optional: pass | violation | inconclusive | incompatible

    [mechanism]
    name = "iclp-qr-mean"            # a catalogue name (``dpaudit list``) ...
    # path = "my_mech.py:build"      # ... or a user's file and callable
    params = { n = 50, epsilon = 1.0 }

    [claim]                          # the claim audited
    epsilon = 1.0
    delta = 0.0
    adjacency = "replace-one"

    [data]                           # exactly one of: generator, files
    generator = "example"            # a named generator (see dpaudit.io.datasets)
    # files = ["D.npy", "D_prime.npy"]
    params = {}

    [budget]
    samples = 200000
    confidence = 0.95
    seed = 0

A *black-box* spec audits an implementation from its samples alone
(:func:`dpaudit.blackbox_audit`): it has a ``[blackbox]`` table instead of (or
in addition to) ``[mechanism]``::

    expected = "violation"           # black-box verdicts: violation | inconclusive

    [blackbox]
    sampler = "impl.py:noisy_hist"   # a plain sampler (data, n, key, **params) -> releases ...
    # mechanism = "faulty/svt-lyu-alg5"   # ... or a catalogue model sampled as a black box
    params = { epsilon = 0.5 }       # keyword arguments of the sampler (or the builder)
    method = "auto"                  # auto | model | logistic | mlp
    reference = "laplace-mean"       # the intended mechanism, for method = "model"
    reference_params = {}
    features = "values"              # values | kl (classifier features)
    objective = "auto"               # auto | epsilon | delta
    stopping = "fixed"               # fixed | sequential (stop once a violation is certified)
    # pairs = "auto"                 # candidate neighbours of the first [data] dataset, or
    # pairs = { kind = "records", domain = [0.0, 1.0] }   # (docs/blackbox.md)

    [budget]
    samples = 200000                 # certification releases per dataset
    select_samples = 20000           # selection releases per dataset

With both tables, ``[mechanism]`` declares the reference model. :func:`load_spec`
validates everything before anything runs and raises :class:`SpecError` (a
``ValueError``) with one line naming the file, the field and the allowed
values; :func:`resolve_mechanism` and :func:`resolve_blackbox` build the
mechanism, the sampler and the reference.

The package's modules:

* :mod:`dpaudit.io.spec.schema` — the records (:class:`AuditSpec`,
  :class:`BlackBoxSpec`), :class:`SpecError` and the allowed keys and values;
* :mod:`dpaudit.io.spec.load` — TOML parsed and validated into the records
  (:func:`load_spec`, :func:`find_specs`); no user code runs;
* :mod:`dpaudit.io.spec.resolve` — user code executed: callables and array files
  loaded, mechanisms and black-box targets built (:func:`resolve_mechanism`,
  :func:`resolve_blackbox`, :func:`load_pair`);
* :mod:`dpaudit.io.spec.training` — ``[training]`` specs: the target built
  (:func:`resolve_training`) and audited (:func:`run_training`); imported on first use
  (module ``__getattr__``), so loading the spec reader does not load the training engine;
* :mod:`dpaudit.io.spec.features` — classifier features of black-box specs
  (:func:`blackbox_features`).
"""

import importlib

from dpaudit.io.spec import schema
from dpaudit.io.spec.features import blackbox_features
from dpaudit.io.spec.load import (
    check_callable_path,
    check_samples,
    check_seed,
    find_specs,
    load_spec,
    split_callable_path,
    with_overrides,
)
from dpaudit.io.spec.resolve import (
    BlackBoxTarget,
    PublicParameters,
    check_dataset,
    check_model_runs,
    check_model_traces,
    check_pair_differs,
    check_sampler_runs,
    check_sampler_traces,
    clear_draw_programs,
    draw_program_count,
    load_array_file,
    load_callable,
    load_pair,
    resolve_blackbox,
    resolve_mechanism,
)
from dpaudit.io.spec.schema import *  # noqa: F403  (the records, constants and error of a spec)

#: The names of :mod:`dpaudit.io.spec.training`, imported on first use: the training engine
#: (and its bounds, canaries and scipy) is loaded only when a ``[training]`` spec is resolved.
_TRAINING = ("resolve_training", "run_training", "training_canary")

__all__ = [
    *schema.__all__,
    *_TRAINING,
    "BlackBoxTarget",
    "PublicParameters",
    "blackbox_features",
    "check_callable_path",
    "check_dataset",
    "check_model_runs",
    "check_model_traces",
    "check_pair_differs",
    "check_sampler_runs",
    "check_sampler_traces",
    "check_samples",
    "check_seed",
    "clear_draw_programs",
    "draw_program_count",
    "find_specs",
    "load_array_file",
    "load_callable",
    "load_pair",
    "load_spec",
    "resolve_blackbox",
    "resolve_mechanism",
    "split_callable_path",
    "with_overrides",
]


def __getattr__(name: str):
    """Import a training name on first use and keep it in the package namespace.

    Args:
        name: an attribute of ``dpaudit.io.spec``.

    Returns:
        The function of :mod:`dpaudit.io.spec.training`.

    Raises:
        AttributeError: for a name the package does not export.
    """
    if name not in _TRAINING:
        raise AttributeError(f"module 'dpaudit.io.spec' has no attribute {name!r}")
    value = getattr(importlib.import_module("dpaudit.io.spec.training"), name)
    globals()[name] = value
    return value
