"""Ten OpenDP measurements audited through :func:`dpaudit.adapters.from_opendp`, with no hand translation.

The claim, the adjacency and the datasets of each audit come from the measurement
(its output measure, its privacy map at ``d_in``, its input metric and domain); a
misuse states, on top of that, the claim a careless user would read off OpenDP.
Every correct measurement is expected ``inconclusive`` (a black-box audit cannot
prove a claim), every misuse ``violation``:

* ``laplace`` — ``make_laplace`` on a float answer, scale 1: epsilon 1 at d_in 1;
* ``gaussian-zcdp`` — ``make_gaussian`` scale 1: 0.5-zCDP at d_in 1;
* ``geometric`` — ``make_geometric`` on an integer answer, scale 1: epsilon 1;
* ``histogram`` — ``make_count_by_categories`` (categories 0..3) ``>> then_laplace(1)``
  on integer records under the symmetric distance: epsilon 1 under add/remove;
* ``composition`` — ``make_composition`` of three queries (clamped sum, count, clamped
  sum), each with Laplace noise of scale 3: epsilon 1 under add/remove;
* ``clamp-sum-laplace`` — ``make_clamp((0, 1)) >> then_sum() >> then_laplace(1)``;
* misuses: ``gaussian-rho-as-epsilon`` (the zCDP map's rho 0.5 read as an (0.5, 1e-6)
  claim: true epsilon at 1e-6 is 5.2), ``laplace-wrong-sensitivity`` (clamp to
  ``(0, 2)``, sum, Laplace of scale 1 as if the sensitivity were 1: claimed epsilon 1,
  OpenDP's own map says 2), ``histogram-replace-one`` (the add/remove histogram's
  epsilon 1 claimed under replace-one, where a record moves between two bins: true 2),
  ``composition-one-budget`` (the composition claimed at one query's epsilon 1/3: true 1).

The audits ship as specs (``audits/libraries/opendp-*.toml``, with their datasets in
``data/``), written by ``python audits/libraries/opendp_audits.py --write-specs
audits/libraries`` from the adapter's own translation (a test checks they still
agree). ``python audits/libraries/opendp_audits.py [-k NAME]`` runs them and prints
one line each (exit code 1 if a verdict differs from its expectation). OpenDP cannot
be seeded: the runs are not reproducible, and every result says so.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from dpaudit.adapters import (
    Auditable,
    find_named,
    from_opendp,
    library_arguments,
    run_library_audits,
    write_library_specs,
)
from dpaudit.blackbox import AutoPairs
from dpaudit.model.claims import Claim

# Releases per dataset: certification, then selection per candidate pair. The correct
# measurements only need to stay below their claims; every misuse is off by a factor of 2
# or more, which 10 000 releases certify with room to spare (measured: BENCHMARKS.md).
_SAMPLES = 10_000
_SELECT = 3_000
# Six of the ten are tight (their true epsilon is their claim): at confidence 0.95 each has up
# to a 5 % chance of a false violation, ~26 % for the six together, and OpenDP's draws are
# fresh on every run (it cannot be seeded). At 0.999 the six share at most 0.6 %, and the
# misuses (off by 1.7 times or more) are still certified.
_CONFIDENCE = 0.999


class OpenDPAudit(NamedTuple):
    """One audit: the measurement's builder, ``d_in``, adapter options, the stated claim."""

    name: str
    build: Callable
    d_in: object
    expected: str
    what: str
    options: dict = {}
    stated: Callable | None = None  # library claim -> the claim a misuse states
    samples: int = _SAMPLES
    select_samples: int = _SELECT
    confidence: float = _CONFIDENCE


def _dp():
    """OpenDP's names these audits use, as ``opendp.prelude`` gives them (the same functions),
    without the prelude's extras: it imports scikit-learn, polars and more (1.4-3 s measured
    under load), none of which a measurement here needs."""
    from opendp import combinators, domains, measurements, metrics, mod, transformations

    mod.enable_features("contrib")
    return types.SimpleNamespace(
        c=combinators,
        m=measurements,
        t=transformations,
        atom_domain=domains.atom_domain,
        vector_domain=domains.vector_domain,
        absolute_distance=metrics.absolute_distance,
        symmetric_distance=metrics.symmetric_distance,
    )


def laplace(scale: float = 1.0):
    """``make_laplace`` on one float answer."""
    dp = _dp()
    return dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def gaussian(scale: float = 1.0):
    """``make_gaussian`` on one float answer (zero-concentrated divergence)."""
    dp = _dp()
    return dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def geometric(scale: float = 1.0):
    """``make_geometric`` on one integer answer."""
    dp = _dp()
    return dp.m.make_geometric(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)


def histogram(scale: float = 1.0):
    """Counts of the categories 0..3 of integer records, Laplace noise on each."""
    dp = _dp()
    counts = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance(), categories=[0, 1, 2, 3]
    )
    return counts >> dp.m.then_laplace(scale)


def clamp_sum_laplace(upper: float = 1.0, scale: float = 1.0):
    """Float records clamped to ``[0, upper]``, summed, Laplace noise of ``scale``."""
    dp = _dp()
    records = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    clamp = dp.t.make_clamp(records, dp.symmetric_distance(), bounds=(0.0, upper))
    return clamp >> dp.t.then_sum() >> dp.m.then_laplace(scale)


def composition(scale: float = 3.0):
    """Three queries on the same records, composed: clamped sum, count, clamped sum."""
    dp = _dp()
    records = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    count = dp.t.make_count(records, dp.symmetric_distance(), TO=int) >> dp.m.then_laplace(scale)
    total = clamp_sum_laplace(1.0, scale)
    return dp.c.make_composition([total, count, total])


def _as_epsilon(delta: float) -> Callable:
    """The misuse "rho read as epsilon": the zCDP map's rho stated as (rho, delta)-DP."""
    return lambda lib: Claim(epsilon=lib.rho, delta=delta, adjacency=lib.adjacency)


AUDITS = [
    OpenDPAudit("laplace", laplace, 1.0, "inconclusive", "make_laplace(scale=1): epsilon 1."),
    OpenDPAudit(
        "gaussian-zcdp", gaussian, 1.0, "inconclusive", "make_gaussian(scale=1): 0.5-zCDP."
    ),
    OpenDPAudit("geometric", geometric, 1, "inconclusive", "make_geometric(scale=1): epsilon 1."),
    OpenDPAudit(
        "histogram",
        histogram,
        1,
        "inconclusive",
        "make_count_by_categories(0..3) >> then_laplace(1), add/remove: epsilon 1.",
        {"domain": (0, 3)},
    ),
    OpenDPAudit(
        "composition",
        composition,
        1,
        "inconclusive",
        "make_composition of a clamped sum, a count and a clamped sum, Laplace scale 3 each: "
        "epsilon 1 under add/remove.",
        {"domain": (0.0, 1.0)},
    ),
    OpenDPAudit(
        "clamp-sum-laplace",
        clamp_sum_laplace,
        1,
        "inconclusive",
        "make_clamp((0, 1)) >> then_sum() >> then_laplace(1): epsilon 1 under add/remove.",
        {"domain": (0.0, 1.0)},
    ),
    OpenDPAudit(
        "gaussian-rho-as-epsilon",
        gaussian,
        1.0,
        "violation",
        "MISUSE: make_gaussian(scale=1)'s map (rho = 0.5, zCDP) read as (0.5, 1e-6)-DP: true "
        "epsilon at 1e-6 is 5.2.",
        stated=_as_epsilon(1e-6),
    ),
    OpenDPAudit(
        "laplace-wrong-sensitivity",
        lambda: clamp_sum_laplace(2.0, 1.0),
        1,
        "violation",
        "MISUSE: clamp to (0, 2), sum, Laplace of scale 1 (the scale for sensitivity 1) "
        "claimed at epsilon 1: OpenDP's map says 2.",
        {"domain": (0.0, 2.0)},
        stated=lambda lib: Claim(epsilon=1.0, adjacency=lib.adjacency),
    ),
    OpenDPAudit(
        "histogram-replace-one",
        histogram,
        1,
        "violation",
        "MISUSE: the add/remove histogram's epsilon 1 claimed under replace-one (a record "
        "moves between two bins): true epsilon 2.",
        {"domain": (0, 3)},
        stated=lambda lib: Claim(epsilon=lib.epsilon, adjacency="replace-one"),
    ),
    OpenDPAudit(
        "composition-one-budget",
        composition,
        1,
        "violation",
        "MISUSE: the composition of three queries claimed at one query's epsilon 1/3: true "
        "epsilon 1.",
        {"domain": (0.0, 1.0)},
        stated=lambda lib: Claim(epsilon=lib.epsilon / 3, adjacency=lib.adjacency),
    ),
]


#: The audit called ``name`` (:func:`dpaudit.adapters.find_named` on :data:`AUDITS`): a
#: ValueError for an unknown name.
audit_named = functools.partial(find_named, AUDITS, library="OpenDP")


def auditable(audit: OpenDPAudit) -> Auditable:
    """The adapter's translation of the audit's measurement (and its stated claim).

    Args:
        audit: the :class:`OpenDPAudit`.

    Returns:
        The :class:`~dpaudit.adapters.Auditable`.
    """
    measurement = audit.build()
    name = f"opendp/{audit.name}"
    plain = from_opendp(measurement, audit.d_in, name=name, **audit.options)
    if audit.stated is None:
        return plain
    claim = audit.stated(plain.library_claim)
    return from_opendp(measurement, audit.d_in, claim=claim, name=name, **audit.options)


def run(audit: OpenDPAudit, samples: int | None = None, seed: int = 0, **options):
    """Audit one measurement through the adapter.

    Args:
        audit: the :class:`OpenDPAudit`.
        samples: certification releases per dataset (default the audit's).
        seed: the audit's seed (selection; OpenDP's own draws are not seeded).
        **options: more keyword arguments of :func:`~dpaudit.blackbox_audit`.

    Returns:
        The :class:`~dpaudit.BlackBoxResult`.
    """
    options.setdefault("select_samples", audit.select_samples)
    options.setdefault("confidence", audit.confidence)
    return auditable(audit).audit(
        samples=audit.samples if samples is None else samples, seed=seed, progress=False, **options
    )


def spec_sampler(data, n, key, *, audit: str):
    """The batch sampler the shipped specs (``opendp-*.toml``) name.

    Args:
        data: a dataset (from the spec's ``data/*.npy`` files, or a generated neighbour).
        n: releases to draw.
        key: the JAX key (unused: OpenDP cannot be seeded).
        audit: the audit's name in :data:`AUDITS`.

    Returns:
        ``n`` releases of the measurement on ``data``.
    """
    sampler = _samplers.get(audit)
    if sampler is None:  # built once per audit name (OpenDP's measurement and its translation)
        sampler = _samplers[audit] = auditable(audit_named(audit)).sampler
    return sampler(data, n, key)


_samplers: dict = {}
# OpenDP's releases are independent whatever the request: the audit draws exactly the
# releases it needs (a last chunk at its own size), each an OpenDP call's worth
spec_sampler.prefix_stable = True
# one OpenDP call per release from Python: the audit may draw on a helper process beside it
spec_sampler.host_python = True


def claim_fields(claim) -> dict:
    """The ``[claim]`` table of a claim (epsilon / delta, or zcdp_rho; and the adjacency).

    Args:
        claim: a :class:`~dpaudit.Claim` or a :class:`~dpaudit.model.claims.ZCDPClaim`.

    Returns:
        The fields, as a spec states them.
    """
    if isinstance(claim, Claim):
        fields = {"epsilon": claim.epsilon, "delta": claim.delta}
    else:
        fields = {"zcdp_rho": claim.rho}
    return {**fields, "adjacency": claim.adjacency}


def _toml_value(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(float(value))


def spec_text(audit: OpenDPAudit) -> str:
    """The TOML spec of an audit, from the adapter's translation.

    Args:
        audit: the :class:`OpenDPAudit`.

    Returns:
        The spec's text; its data files are ``data/opendp-<name>.D.npy`` and ``.D-prime.npy``.
    """
    target = auditable(audit)
    claim = "\n".join(f"{k} = {_toml_value(v)}" for k, v in claim_fields(target.claim).items())
    pairs = ""
    if isinstance(target.pairs, AutoPairs):
        pairs = (
            f'pairs = {{ kind = "{target.pairs.kind}", domain = '
            f"{_toml_value(target.pairs.domain)} }}\n"
        )
    return (
        f'name = "libraries/opendp-{audit.name}"\n'
        f'description = "OpenDP 0.16 through dpaudit.adapters.from_opendp. {audit.what}"\n'
        f'expected = "{audit.expected}"\n\n'
        "[blackbox]                       # written by opendp_audits.py --write-specs\n"
        'sampler = "opendp_audits.py:spec_sampler"\n'
        f'params = {{ audit = "{audit.name}" }}\n'
        f"{pairs}\n"
        "[claim]                          # the adapter's claim (a misuse: the one stated)\n"
        f"{claim}\n\n"
        "[data]\n"
        f'files = ["data/opendp-{audit.name}.D.npy", "data/opendp-{audit.name}.D-prime.npy"]\n\n'
        "[budget]\n"
        f"samples = {audit.samples}\n"
        f"select_samples = {audit.select_samples}\n"
        f"confidence = {audit.confidence}\n"
        "seed = 0\n"
    )


def spec_datasets(audit: OpenDPAudit) -> tuple:
    """``(D, D')`` of the spec: the adapter's pair, or its base dataset and one neighbour.

    With automatic ``pairs`` the audit's candidates are neighbours of ``D``; ``D'`` only has to
    be a valid neighbour for the spec's check (one record removed under add/remove, the last
    record moved to the other end of the domain under replace-one).

    Args:
        audit: the :class:`OpenDPAudit`.

    Returns:
        The two arrays written to the spec's data files.
    """
    target = auditable(audit)
    if isinstance(target.pairs, AutoPairs):
        data = np.asarray(target.data)
        if target.claim.adjacency == "add-remove":
            return data, data[:-1]
        lo, hi = target.pairs.domain
        moved = data.copy()
        moved[-1] = lo if moved[-1] != lo else hi
        return data, moved
    return target.pairs[0]


def write_specs(folder) -> list:
    """Write every audit's spec and its two dataset files into ``folder``.

    Args:
        folder: the target folder (``audits/libraries``).

    Returns:
        The paths written.
    """
    return write_library_specs(
        folder,
        (
            (f"opendp-{a.name}.toml", spec_text(a), f"opendp-{a.name}", spec_datasets(a))
            for a in AUDITS
        ),
    )


def _line(audit: OpenDPAudit, res, seconds: float, cpu: float) -> str:
    return (
        f"{'ok ' if res.verdict == audit.expected else 'BAD'} {audit.name:28s} "
        f"{res.verdict:12s} eps >= {res.epsilon_lower:.3f} (claim {res.claim.epsilon:.3g}, "
        f"{res.claim.delta:g}); {seconds:.1f} s (CPU {cpu:.1f} s)"
    )


def main(argv=None) -> int:
    """Run the audits (or write their specs) and print one line each.

    Args:
        argv: the command line (default ``sys.argv[1:]``).

    Returns:
        The exit code: 1 if a verdict differs from its expectation.
    """
    args = library_arguments(__doc__.splitlines()[0]).parse_args(argv)
    return run_library_audits(
        args, AUDITS, "OpenDP", lambda a: run(a, args.samples, args.seed), _line, write_specs
    )


if __name__ == "__main__":
    sys.exit(main())
