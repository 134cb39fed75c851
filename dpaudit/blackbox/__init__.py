r"""Black-box audits: certified lower bounds on epsilon from samples of an implementation.

A user holds an *implementation* — a numpy function, a library call — not a
numpyro model. :func:`blackbox_audit` audits it from samples alone::

    >>> import dpaudit, jax, jax.numpy as jnp
    >>> from dpaudit.blackbox import blackbox_audit
    >>> def laplace_count(data, n, key):           # claims epsilon = 0.5, really epsilon = 1
    ...     return jnp.sum(data) + jax.random.laplace(key, (n,))
    >>> res = blackbox_audit(laplace_count, jnp.zeros(5), jnp.ones(5).at[1:].set(0.0),
    ...                      dpaudit.Claim(epsilon=0.5), samples=200_000, seed=0,
    ...                      progress=False)
    >>> res.verdict, 0.9 < res.epsilon_lower < 1.0
    ('violation', True)

**The test** (:mod:`~dpaudit.estimation.bounds`). For any event ``S`` (measurable
set of releases, possibly with randomised membership), ``(epsilon, delta)``-DP
implies ``P_D(S) <= e^epsilon P_D'(S) + delta``. With ``k_D`` of ``n`` releases
from ``D`` and ``k_D'`` of ``n`` from ``D'`` in ``S``, one-sided Clopper–Pearson
bounds ``p_lo <= P_D(S)`` and ``q_hi >= P_D'(S)``, each at level ``alpha/2``,
hold together with probability ``>= 1 - alpha``, and then

``epsilon(delta) >= log((p_lo - delta) / q_hi)``  and
``delta(epsilon) >= p_lo - e^epsilon q_hi``.

A pure claim (``delta = 0``) is certified by one tighter bound instead, decided by the
claim before any release is drawn: the number of certification releases per dataset is
Poisson(``n``), so given ``k_D + k_D'`` the count ``k_D`` is binomial with success
probability ``theta = P_D(S) / (P_D(S) + P_D'(S))``, and one Clopper–Pearson bound
``theta_lo`` at level ``alpha`` gives ``epsilon >= log(theta_lo / (1 - theta_lo))``
(:func:`~dpaudit.estimation.bounds.bound_method`).

Both are certified lower bounds at confidence ``1 - alpha`` **provided S was
chosen without looking at the certification samples**. The audit therefore
draws two disjoint sets of releases per dataset (:mod:`~dpaudit.blackbox.samplers`):
a *selection* set on which it builds a test statistic and chooses the event,
and a *certification* set on which it counts
(:mod:`~dpaudit.blackbox.certification`) — one event, one pair, one direction,
certified once (no best-of-many).

**Choosing the event** (Neyman–Pearson, :mod:`~dpaudit.blackbox.selection`): the
most powerful test of ``P_D`` against ``P_D'`` thresholds the privacy loss
``L(x) = log p_D(x) - log p_D'(x)``, so events are ``S = {s(x) > t}`` plus, at
an atom of ``s``, the releases with ``s(x) = t`` kept with probability
``gamma`` (randomised ties: needed for discrete releases such as sparse-vector
outputs). The statistic ``s`` (:mod:`~dpaudit.blackbox.statistics`) is:

* ``"model"`` — the privacy loss of a *reference* :class:`~dpaudit.Mechanism`
  (the intended mechanism, declared as a numpyro model). Optimal when the
  implementation matches the model, and still a valid test when it does not
  (validity only needs ``s`` fixed before certification).
* ``"logistic"`` / ``"mlp"`` — model-free: a classifier trained to tell
  releases of ``D`` from releases of ``D'`` (logistic regression fitted with
  scipy's L-BFGS, or a small ReLU network trained with Adam in JAX), on
  features of the release: by default the release values with ``|x|``,
  ``x^2`` and fitted per-coordinate log-density ratios (Gaussian, Laplace,
  histogram), so that changes of scale, support and atoms are seen;
  Karhunen–Loève coefficients of a functional release (:func:`kl_features`);
  or any callable. Its log-odds estimate ``L`` (this is DP-Sniper's idea). Half the
  selection set trains the classifier, the other half chooses the threshold.

With a reference and ``statistic="auto"``, both the model's loss and the
default classifier are candidates, chosen between on the selection set.
Both directions are tried (``s`` for ``D -> D'``, ``-s`` for ``D' -> D``) and
each candidate event is scored on the selection set by the bound it would
certify with the certification sample size (Jeffreys-type plug-in counts, so
events never seen under the denominator dataset are not over-trusted). The
best (pair, direction, threshold, tie probability) is then certified.

**Verdicts** (:mod:`~dpaudit.blackbox.result`). ``"violation"`` when the
certified ``epsilon`` lower bound at the claimed ``delta`` exceeds the claimed
``epsilon`` (equivalently, the certified ``delta`` lower bound at the claimed
``epsilon`` exceeds the claimed ``delta``); otherwise ``"inconclusive"``:
samples can refute a claim, never prove it. A black-box audit never returns
``"pass"``. Every result states its *strength*: the smallest violation its
budget would have certified (``result.strength``; see ``docs/blackbox.md``).

**Floating point.** Releases computed in floating point are not exactly the
mathematical mechanism: ``0 + Z`` and ``1 + Z`` land on different sets of
doubles, and an event built from the low-order bits of the release separates
them perfectly (Mironov, CCS 2012). Such an event is a genuine violation of
the implementation, but not the question this audit asks: statistics are
rounded to multiples of :data:`STATISTIC_RESOLUTION` (``2^-30``) before
thresholding, so events are unions of level sets of a smooth statistic and
carry no information from the last bits of the release. Floating-point
attacks have statistics built for them (:mod:`~dpaudit.blackbox.statistics.floats`):
``"float"`` (is the release reachable by numpy's Laplace arithmetic from each
dataset? ``"auto"`` offers it whenever its fit is found on the selection set)
and ``"bits"`` (the MLP on bit-level features of the release).

The driver is :func:`blackbox_audit` in :mod:`dpaudit.blackbox.engine`.
:func:`check_parity` (:mod:`~dpaudit.blackbox.parity`) tests whether an
implementation draws from the model it declares, at a stated level and power.
"""

from __future__ import annotations

from dpaudit.blackbox.autopairs import AutoPairs
from dpaudit.blackbox.engine import blackbox_audit, run_blackbox_audit
from dpaudit.blackbox.neighbours import neighbour_candidates
from dpaudit.blackbox.options import BlackBoxOptions
from dpaudit.blackbox.parity import ParityResult, check_parity
from dpaudit.blackbox.percall import per_call
from dpaudit.blackbox.result import BlackBoxResult, CertifiedEvent
from dpaudit.blackbox.samplers import as_sampler, numpy_generator
from dpaudit.blackbox.selection import OBJECTIVES as OBJECTIVES
from dpaudit.blackbox.statistics import STATISTIC_RESOLUTION as STATISTIC_RESOLUTION
from dpaudit.blackbox.statistics import STATISTICS as STATISTICS
from dpaudit.blackbox.statistics import ClassifierOptions, kl_features
from dpaudit.estimation.bounds import certified_delta, certified_epsilon, clopper_pearson

# Public names of the package. OBJECTIVES (choices of objective=), STATISTICS (choices of
# statistic=) and STATISTIC_RESOLUTION are importable from here too, outside __all__ (the
# spec reader, the CLI and the tests use them).
__all__ = [
    "METHODS",
    "AutoPairs",
    "BlackBoxOptions",
    "BlackBoxResult",
    "CertifiedEvent",
    "ClassifierOptions",
    "ParityResult",
    "as_sampler",
    "blackbox_audit",
    "certified_delta",
    "certified_epsilon",
    "check_parity",
    "clopper_pearson",
    "kl_features",
    "neighbour_candidates",
    "numpy_generator",
    "per_call",
    "run_blackbox_audit",
]

#: The former name of :data:`~dpaudit.blackbox.statistics.STATISTICS` (the choices of
#: ``statistic=``), kept for the spec reader and existing callers.
METHODS = STATISTICS
