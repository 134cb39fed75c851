"""Black-box audits of diffprivlib primitives and tools at their documented claims, and of misuses.

diffprivlib (IBM, 0.6.6) exposes mechanisms that randomise one value per call
(``Laplace(epsilon=..., sensitivity=...).randomise(x)``) and tools that release
one statistic per call (``tools.mean``, ``tools.histogram``). Each is audited as a
per-call sampler through :func:`dpaudit.blackbox.per_call`. diffprivlib takes its
randomness as ``random_state`` (an integer or a legacy ``numpy.random.RandomState``)
and refuses the ``numpy.random.Generator`` the adapter hands out, so every Generator
is wrapped once in a ``RandomState`` sharing its bit generator (:class:`Seeded`): the
runs are reproducible from the audit's seed. Unseeded, diffprivlib draws from
``secrets.SystemRandom`` (its production path; ``--unseeded``).

Every correct use is expected ``inconclusive`` (with the audit's strength shown),
every misuse ``violation`` (all claims are replace-one unless stated):

* ``laplace`` — ``Laplace(epsilon=1, sensitivity=1)`` on the sum of 5 records in
  [0, 1] (one replaced: the answer moves by 1), claim 1;
* ``gaussian`` — the classical ``Gaussian(epsilon=1, delta=1e-5, sensitivity=1)``;
* ``gaussian-analytic`` — ``GaussianAnalytic(epsilon=1, delta=1e-5, sensitivity=1)``;
* ``geometric`` — ``Geometric(epsilon=1, sensitivity=1)`` on a count of 5 bits;
* ``exponential`` — ``Exponential(epsilon=1, sensitivity=1, utility=vote counts)``
  choosing among 3 candidates (replacing a vote moves two counts by 1);
* ``randomised-response`` — ``Binary(epsilon=log 3)`` on one bit (local DP);
* ``mean`` — ``tools.mean(x, epsilon=1, bounds=(0, 1))`` of 10 records;
* ``histogram`` — ``tools.histogram(x, epsilon=1, bins=4, range=(0, 4))``, claimed
  under add-remove (adding a record moves one count by 1);
* misuses: ``laplace-sensitivity-2`` (a sum of records clipped to [-1, 1] has
  replace-one sensitivity 2, passed as 1: true epsilon 2),
  ``laplace-scale-as-epsilon`` (the numpy scale ``1/epsilon = 2`` passed as
  ``epsilon`` for a claim of 0.5: true 2), ``laplace-l2-sensitivity`` (four column
  sums of binary attributes, Laplace per coordinate with the l2 sensitivity 2 instead
  of the l1 sensitivity 4: true 2), ``gaussian-wrong-delta`` (``GaussianAnalytic``
  calibrated at ``delta = 1e-2``, claimed at ``1e-5``), ``exponential-monotonic``
  (``monotonic=True`` for vote counts, which are not monotone under replace-one: true
  epsilon on the pair 1.31), ``randomised-response-two-attributes`` (``Binary`` at
  epsilon 1 on each of a record's two bits, claimed epsilon 1 per record: true 2),
  ``mean-bounds-from-data`` (``tools.mean`` without ``bounds``: diffprivlib warns and
  takes them from the data; the output range then reveals the record: unbounded
  epsilon), ``histogram-replace-one`` (the add-remove histogram claimed under
  replace-one, where a record moves between two bins: true 2).

Run ``python audits/libraries/diffprivlib_primitives.py [--samples N] [--seed S]``
(needs the ``libraries`` extra: ``pip install -e ".[libraries]"``); exit code 1 if a
verdict differs from its expectation. The same audits ship as specs
(``audits/libraries/diffprivlib-*.toml`` with their datasets in ``data/``, written by
``--write-specs audits/libraries``), so ``dpaudit audit audits/`` runs them too. See
``docs/libraries.md``.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import dpaudit
from dpaudit.adapters import (
    find_named,
    library_arguments,
    run_library_audits,
    write_library_specs,
)
from dpaudit.blackbox import blackbox_audit, per_call

# Budgets: releases per dataset for certification, then for selection. A mechanism call
# costs 5-25 microseconds (CPU, measured): 50 000 + 10 000 (the engine's default selection)
# keep those audits at a few seconds. A tool call (tools.mean, tools.histogram: argument
# checks, an accountant, a numpy statistic, a mechanism per value) costs ~140 microseconds,
# so the tools get 10 000 + 5 000: still enough to certify their misuses (true epsilon 2
# or more) and to state an audit strength within ~6 % of the claim for the correct ones.
_SAMPLES = 50_000
_SELECT = 10_000
# (epsilon, delta) claims: the default objective chooses between the best epsilon event and
# the best delta event on the selection set, and the delta violation of a Gaussian calibrated
# at the wrong delta (1e-2 against 1e-5) sits on an event of probability ~5 %: at 50 000 +
# 10 000 it was certified on 2 of 5 fresh seeds (101-105), at 100 000 + 50 000 on 5 of 5.
_APPROX_SAMPLES = 100_000
_APPROX_SELECT = 50_000
_TOOL_SAMPLES = 10_000
_TOOL_SELECT = 5_000


class LibraryAudit(NamedTuple):
    """One audit: the primitive, its parameters, the neighbouring inputs, the claim, the verdict."""

    name: str
    build: Callable
    params: dict
    inputs: tuple
    claim: tuple
    expected: str
    what: str
    samples: int = _SAMPLES
    select_samples: int = _SELECT


def _dpl():
    """diffprivlib, imported on first use (the module loads without the extra)."""
    try:
        with warnings.catch_warnings():  # its import-time deprecations are not the audit's
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            import diffprivlib
    except ImportError as err:
        raise ImportError(
            f"the diffprivlib audits need diffprivlib 0.6.6 ({err}); install the extra: "
            'pip install -e ".[libraries]".'
        ) from None
    return diffprivlib


class Seeded:
    """``f(data, rng)`` for ``per_call(seed="generator")`` from a diffprivlib primitive.

    diffprivlib refuses ``numpy.random.Generator`` (its ``check_random_state`` takes
    ``None``, an integer or a ``RandomState``). The adapter hands one Generator per
    block of calls; it is wrapped once in ``RandomState(rng.bit_generator)`` (the same
    stream, legacy interface) and the primitive is built once per block with it.

    Args:
        make: ``make(random_state) -> release``, where ``release(data)`` returns one release.
    """

    def __init__(self, make: Callable):
        self.make = make
        self._rng = None  # kept alive, so a new Generator is never mistaken for it
        self._release = None

    def __call__(self, data, rng):
        if rng is not self._rng:
            self._rng = rng
            self._release = self.make(np.random.RandomState(rng.bit_generator))
        return self._release(data)


# ------------------------------------------------------------------ primitives
# Each builder takes the primitive's parameters and returns make(random_state) ->
# release(data), one release per call. make runs once per block of calls, all on the same
# dataset object: the query answer handed to the mechanism (a sum, counts, bits) is computed
# once per block by Answer, and the library is called once per release as before.


class Answer:
    """``query(data)`` computed once per dataset object and reused while the same one comes.

    A block of per-call releases passes one dataset object to every call; the answer (a
    number or a tuple: immutable) is what each call hands to the library. The object is
    kept, so its identity cannot be reused by another dataset while it is cached.

    Args:
        query: ``query(data) -> answer``.
    """

    def __init__(self, query: Callable):
        self.query = query
        self.data = None
        self.value = None
        self.computed = 0  # answers computed (a test pins one per block)

    def __call__(self, data):
        if data is not self.data or self.computed == 0:
            self.data, self.value = data, self.query(data)
            self.computed += 1
        return self.value


def _total(data) -> float:
    return float(np.sum(data))


def laplace(*, epsilon: float, sensitivity: float = 1.0):
    """``Laplace`` on a query answer: the sum of the records (in ``[0, 1]``: sensitivity 1)."""

    def make(state):
        mech = _dpl().mechanisms.Laplace(
            epsilon=epsilon, sensitivity=sensitivity, random_state=state
        )
        answer = Answer(_total)
        return lambda data: mech.randomise(answer(data))

    return make


def gaussian(*, epsilon: float, delta: float, sensitivity: float = 1.0, analytic: bool = False):
    """``Gaussian`` (classical, epsilon <= 1) or ``GaussianAnalytic`` on the sum of the records."""

    def make(state):
        m = _dpl().mechanisms
        cls = m.GaussianAnalytic if analytic else m.Gaussian
        mech = cls(epsilon=epsilon, delta=delta, sensitivity=sensitivity, random_state=state)
        answer = Answer(_total)
        return lambda data: mech.randomise(answer(data))

    return make


def geometric(*, epsilon: float, sensitivity: int = 1):
    """``Geometric`` on a count: the sum of the records (bits: sensitivity 1)."""

    def make(state):
        mech = _dpl().mechanisms.Geometric(
            epsilon=epsilon, sensitivity=sensitivity, random_state=state
        )
        answer = Answer(lambda data: int(np.sum(data)))
        return lambda data: mech.randomise(answer(data))

    return make


def exponential(*, epsilon: float, candidates: int = 3, monotonic: bool = False):
    """``Exponential`` choosing a candidate by its vote count (records are votes ``0..k-1``).

    Replacing a vote moves two counts by 1: utility sensitivity 1 (but not monotone).
    """

    def make(state):
        mod = _dpl().mechanisms
        built = {}  # one mechanism per utility vector (building one costs ~30 microseconds)
        tally = Answer(
            lambda data: tuple(
                np.bincount(np.asarray(data, dtype=int), minlength=candidates)
                .astype(float)
                .tolist()
            )
        )

        def release(data):
            counts = tally(data)
            if counts not in built:
                built[counts] = mod.Exponential(
                    epsilon=epsilon,
                    sensitivity=1.0,
                    utility=list(counts),
                    monotonic=monotonic,
                    random_state=state,
                )
            return built[counts].randomise()

        return release

    return make


def binary(*, epsilon: float):
    """``Binary`` (randomised response) on each bit of one record ``(1, bits)`` (or one bit)."""

    def make(state):
        mech = _dpl().mechanisms.Binary(
            epsilon=epsilon, value0="no", value1="yes", random_state=state
        )

        labels = Answer(lambda data: tuple("yes" if b else "no" for b in np.ravel(data)))

        def release(data):
            out = tuple(mech.randomise(label) for label in labels(data))
            return out if len(out) > 1 else out[0]

        return release

    return make


def clipped_sum_laplace(
    *, epsilon: float, sensitivity: float, low: float = -1.0, high: float = 1.0
):
    """``Laplace`` on the sum of records clipped to ``[low, high]`` (sensitivity ``high - low``)."""

    def make(state):
        mech = _dpl().mechanisms.Laplace(
            epsilon=epsilon, sensitivity=sensitivity, random_state=state
        )
        answer = Answer(lambda data: float(np.sum(np.clip(data, low, high))))
        return lambda data: mech.randomise(answer(data))

    return make


def column_sums_laplace(*, epsilon: float, sensitivity: float):
    """``Laplace`` on each column sum of binary records ``(n, d)``, one mechanism per call."""

    def make(state):
        mech = _dpl().mechanisms.Laplace(
            epsilon=epsilon, sensitivity=sensitivity, random_state=state
        )

        sums = Answer(lambda data: tuple(np.sum(np.asarray(data, dtype=float), axis=0).tolist()))

        def release(data):
            return np.array([mech.randomise(s) for s in sums(data)])

        return release

    return make


def mean(*, epsilon: float, bounds: tuple | None = (0.0, 1.0)):
    """``tools.mean`` (a fresh accountant per call: the default one would keep every spend)."""

    def make(state):
        dpl = _dpl()

        def release(data):
            with warnings.catch_warnings():  # bounds=None: diffprivlib's PrivacyLeakWarning
                warnings.simplefilter("ignore", dpl.utils.PrivacyLeakWarning)
                return dpl.tools.mean(
                    np.asarray(data, dtype=float),
                    epsilon=epsilon,
                    bounds=bounds,
                    random_state=state,
                    accountant=dpl.BudgetAccountant(),
                )

        return release

    return make


def histogram(*, epsilon: float, bins: int = 4, low: float = 0.0, high: float = 4.0):
    """``tools.histogram`` with a data-independent range; the release is the noisy counts."""

    def make(state):
        dpl = _dpl()

        def release(data):
            counts, _edges = dpl.tools.histogram(
                np.asarray(data, dtype=float),
                epsilon=epsilon,
                bins=bins,
                range=(low, high),
                random_state=state,
                accountant=dpl.BudgetAccountant(),
            )
            return counts

        return release

    return make


# ------------------------------------------------------------------ the audits

# Query answers are sums of records (in [0, 1], or bits): replacing the first record moves
# the answer by 1, and the pair's adjacency is checked like any dataset's.
_REALS = np.array([0.0, 0.2, 0.9, 0.5, 0.4])
_REALS_MOVED = np.array([1.0, 0.2, 0.9, 0.5, 0.4])
_BITS = np.array([0, 1, 1, 0, 1])
_BITS_MOVED = np.array([1, 1, 1, 0, 1])
_VOTES = np.array([0, 1, 2, 0, 1, 2])  # three candidates, two votes each
_VOTES_MOVED = np.array([1, 1, 2, 0, 1, 2])  # one vote moved from candidate 0 to 1
_POINTS = np.array([0.0] + [0.5] * 9)  # ten records in [0, 1]
_POINTS_MOVED = np.array([1.0] + [0.5] * 9)  # the first moved to the other end
_LABELS = np.array([0.5, 1.5, 2.5, 3.5, 1.5])  # records falling in bins 0, 1, 2, 3, 1
_ATTRIBUTES = np.zeros((5, 4))  # five records, four binary attributes each
_ATTRIBUTES_MOVED = np.vstack([np.ones((1, 4)), np.zeros((4, 4))])

AUDITS = [
    LibraryAudit(
        "laplace",
        laplace,
        {"epsilon": 1.0},
        (_REALS, _REALS_MOVED),
        (1.0, 0.0),
        "inconclusive",
        "Laplace(epsilon=1, sensitivity=1) on the sum of 5 records in [0, 1], one replaced: "
        "true epsilon 1.",
    ),
    LibraryAudit(
        "gaussian",
        gaussian,
        {"epsilon": 1.0, "delta": 1e-5},
        (_REALS, _REALS_MOVED),
        (1.0, 1e-5),
        "inconclusive",
        "The classical Gaussian(epsilon=1, delta=1e-5, sensitivity=1), sigma = "
        "sqrt(2 log(1.25/delta)) = 4.84: true epsilon at delta 1e-5 is 0.75 (the calibration is loose).",
        _APPROX_SAMPLES,
        _APPROX_SELECT,
    ),
    LibraryAudit(
        "gaussian-analytic",
        gaussian,
        {"epsilon": 1.0, "delta": 1e-5, "analytic": True},
        (_REALS, _REALS_MOVED),
        (1.0, 1e-5),
        "inconclusive",
        "GaussianAnalytic(epsilon=1, delta=1e-5, sensitivity=1) (Balle & Wang): tight, true "
        "epsilon 1 at delta 1e-5.",
        _APPROX_SAMPLES,
        _APPROX_SELECT,
    ),
    LibraryAudit(
        "geometric",
        geometric,
        {"epsilon": 1.0},
        (_BITS, _BITS_MOVED),
        (1.0, 0.0),
        "inconclusive",
        "Geometric(epsilon=1, sensitivity=1) on a count of 5 bits, one flipped: true epsilon 1.",
    ),
    LibraryAudit(
        "exponential",
        exponential,
        {"epsilon": 1.0},
        (_VOTES, _VOTES_MOVED),
        (1.0, 0.0),
        "inconclusive",
        "Exponential(epsilon=1, sensitivity=1) choosing among 3 candidates by vote count, one "
        "vote moved (counts 2,2,2 -> 1,3,2): true epsilon on this pair 0.58.",
    ),
    LibraryAudit(
        "randomised-response",
        binary,
        {"epsilon": math.log(3)},
        (_BITS[:1], _BITS_MOVED[:1]),
        (math.log(3), 0.0),
        "inconclusive",
        "Binary(epsilon=log 3), randomised response on one bit (keep with probability 3/4): "
        "true epsilon log 3.",
    ),
    LibraryAudit(
        "mean",
        mean,
        {"epsilon": 1.0},
        (_POINTS, _POINTS_MOVED),
        (1.0, 0.0),
        "inconclusive",
        "tools.mean(x, epsilon=1, bounds=(0, 1)) of 10 records, one moved from 0 to 1 "
        "(truncated Laplace of scale 1/10): true epsilon 1.",
        _TOOL_SAMPLES,
        _TOOL_SELECT,
    ),
    LibraryAudit(
        "histogram",
        histogram,
        {"epsilon": 1.0},
        (_LABELS, np.append(_LABELS, 2.5)),
        (1.0, 0.0, "add-remove"),
        "inconclusive",
        "tools.histogram(x, epsilon=1, bins=4, range=(0, 4)) under add-remove, one record "
        "added: true epsilon 1.",
        _TOOL_SAMPLES,
        _TOOL_SELECT,
    ),
    LibraryAudit(
        "laplace-sensitivity-2",
        clipped_sum_laplace,
        {"epsilon": 1.0, "sensitivity": 1.0},
        (np.array([-1.0, 0.3, 0.5]), np.array([1.0, 0.3, 0.5])),
        (1.0, 0.0),
        "violation",
        "MISUSE: Laplace with sensitivity=1 on a sum of records clipped to [-1, 1] (replace-one "
        "sensitivity 2): true epsilon 2.",
    ),
    LibraryAudit(
        "laplace-scale-as-epsilon",
        laplace,
        {"epsilon": 2.0},
        (_REALS, _REALS_MOVED),
        (0.5, 0.0),
        "violation",
        "MISUSE: the numpy scale 1/epsilon = 2 passed as Laplace's epsilon for a claim of 0.5: "
        "true epsilon 2.",
    ),
    LibraryAudit(
        "laplace-l2-sensitivity",
        column_sums_laplace,
        {"epsilon": 1.0, "sensitivity": 2.0},
        (_ATTRIBUTES, _ATTRIBUTES_MOVED),
        (1.0, 0.0),
        "violation",
        "MISUSE: Laplace on each of 4 column sums of binary records with the l2 sensitivity 2 "
        "where the l1 sensitivity 4 is needed: true epsilon 2.",
    ),
    LibraryAudit(
        "gaussian-wrong-delta",
        gaussian,
        {"epsilon": 1.0, "delta": 1e-2, "analytic": True},
        (_REALS, _REALS_MOVED),
        (1.0, 1e-5),
        "violation",
        "MISUSE: GaussianAnalytic calibrated at delta = 1e-2, claimed at delta = 1e-5: true "
        "epsilon at delta 1e-5 is 2.14 (delta at epsilon 1 is 1e-2).",
        _APPROX_SAMPLES,
        _APPROX_SELECT,
    ),
    LibraryAudit(
        "exponential-monotonic",
        exponential,
        {"epsilon": 1.0, "monotonic": True},
        (_VOTES, _VOTES_MOVED),
        (1.0, 0.0),
        "violation",
        "MISUSE: Exponential with monotonic=True on vote counts, which are not monotone under "
        "replace-one (one count falls, one rises): true epsilon on this pair 1.31.",
    ),
    LibraryAudit(
        "randomised-response-two-attributes",
        binary,
        {"epsilon": 1.0},
        (np.array([[0, 0]]), np.array([[1, 1]])),
        (1.0, 0.0),
        "violation",
        "MISUSE: Binary(epsilon=1) on each of a record's two bits, claimed epsilon 1 per record "
        "(composition forgotten): true epsilon 2.",
    ),
    LibraryAudit(
        "mean-bounds-from-data",
        mean,
        {"epsilon": 1.0, "bounds": None},
        (_POINTS, np.append(_POINTS[:-1], 3.0)),
        (1.0, 0.0),
        "violation",
        "MISUSE: tools.mean without bounds (diffprivlib warns and takes them from the data): the "
        "output range reveals the replaced record: true epsilon infinite.",
        _TOOL_SAMPLES,
        _TOOL_SELECT,
    ),
    LibraryAudit(
        "histogram-replace-one",
        histogram,
        {"epsilon": 1.0},
        (_LABELS, np.append(_LABELS[:-1], 2.5)),
        (1.0, 0.0),
        "violation",
        "MISUSE: tools.histogram (epsilon-DP under add-remove) claimed under replace-one, where a "
        "record moves between two bins: true epsilon 2.",
        _TOOL_SAMPLES,
        _TOOL_SELECT,
    ),
]


#: The audit called ``name`` (:func:`dpaudit.adapters.find_named` on :data:`AUDITS`): a
#: ValueError for an unknown name.
audit_named = functools.partial(find_named, AUDITS, library="diffprivlib")


def sampler_of(audit: LibraryAudit, seeded: bool = True) -> Callable:
    """The audit's batch sampler ``(data, n, key) -> releases`` (through ``per_call``).

    Args:
        audit: the :class:`LibraryAudit`.
        seeded: draw diffprivlib's randomness from the audit's key (reproducible), or
            let it use its own ``secrets.SystemRandom`` (its production path; not reproducible).

    Returns:
        The sampler, named ``diffprivlib/<audit>``.
    """
    make = audit.build(**audit.params)
    name = f"diffprivlib/{audit.name}"
    if seeded:
        return per_call(Seeded(make), seed="generator", name=name)
    release = make(None)  # random_state=None: diffprivlib's secure generator

    def primitive(data):
        return release(data)

    return per_call(primitive, name=name)


def run(
    audit: LibraryAudit,
    samples: int | None = None,
    seed: int = 0,
    select_samples: int | None = None,
    seeded: bool = True,
    statistic: str = "auto",
):
    """Audit one diffprivlib primitive as a per-call sampler.

    Args:
        audit: the :class:`LibraryAudit`.
        samples: certification releases per dataset (default the audit's budget).
        seed: the audit's seed (also diffprivlib's randomness when ``seeded``).
        select_samples: selection releases per dataset (default the audit's).
        seeded: see :func:`sampler_of`.
        statistic: the engine's statistic (``"auto"``, ``"float"``, ``"bits"``, ...).

    Returns:
        The :class:`~dpaudit.BlackBoxResult`.
    """
    epsilon, delta, *adjacency = audit.claim
    claim = dpaudit.Claim(epsilon, delta, adjacency=adjacency[0] if adjacency else "replace-one")
    d, d1 = audit.inputs
    return blackbox_audit(
        sampler_of(audit, seeded),
        d,
        d1,
        claim,
        statistic=statistic,
        samples=audit.samples if samples is None else samples,
        select_samples=audit.select_samples if select_samples is None else select_samples,
        seed=seed,
        progress=False,
    )


def spec_sampler(data, n, key, *, audit: str):
    """The batch sampler the shipped specs (``diffprivlib-*.toml``) name, for audit ``audit``.

    Args:
        data: the dataset (from the spec's ``data/*.npy`` files).
        n: releases to draw.
        key: the JAX key (diffprivlib's randomness is derived from it).
        audit: the audit's name in :data:`AUDITS`.

    Returns:
        ``n`` releases; ``Binary``'s labels as numbers (``"yes"`` 1, ``"no"`` 0): a spec's
        pre-audit check wants real-valued releases (``blackbox_audit`` itself maps strings).
    """
    releases = sampler_of(audit_named(audit))(data, n, key)
    if isinstance(releases, tuple):
        return tuple(_numeric(part) for part in releases)
    return _numeric(releases)


# one seeded block per request (per_call in this process): the first m releases of a request
# for n are the releases of a request for m, so the audit draws a last chunk at its own size
spec_sampler.prefix_stable = True
# diffprivlib's own Python per release: the audit may draw on a helper process beside it
spec_sampler.host_python = True


def _numeric(part):
    part = np.asarray(part)
    return (part == "yes").astype(float) if part.dtype.kind in "USO" else part


def spec_text(audit: LibraryAudit) -> str:
    """The TOML spec of an audit (what ``--write-specs`` writes).

    Args:
        audit: the :class:`LibraryAudit`.

    Returns:
        The spec's text; its data files are ``data/<name>.D.npy`` and ``data/<name>.D-prime.npy``.
    """
    epsilon, delta, *adjacency = audit.claim
    return (
        f'name = "libraries/diffprivlib-{audit.name}"\n'
        f'description = "diffprivlib 0.6.6, audited as a per-call sampler. {audit.what}"\n'
        f'expected = "{audit.expected}"\n\n'
        "[blackbox]                       # written by diffprivlib_primitives.py --write-specs\n"
        'sampler = "diffprivlib_primitives.py:spec_sampler"\n'
        f'params = {{ audit = "{audit.name}" }}\n'
        'objective = "auto"\n\n'
        "[claim]\n"
        f"epsilon = {epsilon!r}\n"
        f"delta = {delta!r}\n"
        f'adjacency = "{adjacency[0] if adjacency else "replace-one"}"\n\n'
        "[data]\n"
        f'files = ["data/{audit.name}.D.npy", "data/{audit.name}.D-prime.npy"]\n\n'
        "[budget]\n"
        f"samples = {audit.samples}\n"
        f"select_samples = {audit.select_samples}\n"
        "confidence = 0.95\n"
        "seed = 0\n"
    )


def write_specs(folder) -> list:
    """Write every audit's spec and its two dataset files into ``folder``.

    Args:
        folder: the target folder (``audits/libraries``).

    Returns:
        The paths written.
    """
    return write_library_specs(
        folder,
        ((f"diffprivlib-{a.name}.toml", spec_text(a), a.name, a.inputs) for a in AUDITS),
    )


def summary(audit: LibraryAudit, res, seconds: float, cpu: float) -> str:
    """One line: verdict, certified bound, audit strength, budget and time.

    Args:
        audit: the :class:`LibraryAudit`.
        res: its :class:`~dpaudit.BlackBoxResult`.
        seconds: the wall time of the audit.
        cpu: its CPU time (this process).

    Returns:
        The line (``ok`` or ``BAD`` first).
    """
    ok = "ok " if res.verdict == audit.expected else "BAD"
    eps, delta = audit.claim[:2]
    strength = res.strength._asdict() if res.strength is not None else {}
    return (
        f"{ok} {audit.name:36s} {res.verdict:12s} eps >= {res.epsilon_lower:.3f} "
        f"delta >= {res.delta_lower:.3g} (claim {eps:.3g}, {delta:g}); strength: eps >= "
        f"{strength.get('epsilon', math.inf):.3g} / delta >= {strength.get('delta', math.inf):.3g}"
        f" (any event: eps >= {strength.get('epsilon_any_event', math.inf):.3g}); "
        f"{res.samples} + {res.samples_select} releases per dataset; {seconds:.1f} s "
        f"(CPU {cpu:.1f} s)"
    )


def main(argv=None) -> int:
    """Run every audit and print one line each.

    Args:
        argv: the command line (default ``sys.argv[1:]``).

    Returns:
        The exit code: 1 if a verdict differs from its expectation.
    """
    parser = library_arguments(__doc__.splitlines()[0])
    parser.add_argument("--unseeded", action="store_true", help="diffprivlib's secure RNG")
    args = parser.parse_args(argv)
    return run_library_audits(
        args,
        AUDITS,
        "diffprivlib",
        lambda a: run(a, args.samples, args.seed, seeded=not args.unseeded),
        summary,
        write_specs,
    )


if __name__ == "__main__":
    sys.exit(main())
