"""The windowed tree's round-off bound (``compose_windowed``) against extended precision.

The tree (``composition.compose_windowed``, 32 different pmfs and more) folds its operands onto
Chernoff windows and convolves them cyclically; its round-off is bounded from the operands'
norms with the FFT error model of ``profiles.fft_convolution_error`` (docs/composition.md,
"Round-off of the windowed tree"). The reference is the *same tree* run in long double (the
tree keeps that type; its windows come from float64 statistics, so both runs cut the same
ranges): what the bound promises is the distance to that tree in exact arithmetic.

Mutation checks: ``FFT_ULPS_PER_LEVEL`` halved, either carried (propagated) term left out,
or ``sqrt(support)`` left out fails ``test_bound_covers_admissible_fft_errors``; the fold's
charge halved fails ``test_fold_charge_covers_an_adversarial_sum``; the margin without the
tree's bound fails ``test_margin_carries_the_tree_bound``.
"""

import math
import types

import numpy as np
import pytest
import scipy.fft

from dpaudit.accounting import composition
from dpaudit.accounting.composition import LaplaceComponent, compose_accounting
from dpaudit.accounting.profiles import laplace_components

U = 2.0**-53
EXTENDED = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps
MODEL_ULPS = 16.0  # the FFT error model's constant, stated here independently of the code
TAIL = 1e-15

pytestmark = pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")


def _two_point_leaves(count: int, seed: int) -> list:
    """Pmfs with two atoms near 1/2 at the ends of supports of 20 to 400 points."""
    rng = np.random.default_rng(seed)
    leaves = []
    for width in rng.integers(20, 400, count).tolist():
        p = np.zeros(width)
        p[0], p[-1] = 0.5 - 1e-3, 0.5 + 1e-3
        leaves.append((-(width // 2), p))
    return leaves


def _gaussian_leaf(half: int, scale: float) -> tuple:
    x = np.arange(-half, half + 1)
    p = np.exp(-0.5 * (x / scale) ** 2)
    return -half, p / p.sum()


CASES = {
    "two atoms near 1/2": lambda: _two_point_leaves(100, 1),
    "two atoms and a long Gaussian": lambda: [*_two_point_leaves(40, 2), _gaussian_leaf(3000, 300)],
    "Laplace upper pmfs": lambda: laplace_components(
        np.random.default_rng(3).uniform(0.002, 0.08, 64), 1e-3, "pessimistic"
    )[0],
    "Laplace lower pmfs": lambda: laplace_components(
        np.random.default_rng(4).uniform(0.001, 0.02, 300), 1e-4, "optimistic"
    )[0],
}


def _observed(pmfs, result) -> float:
    """L1 distance of ``result`` to the same tree run in long double."""
    reference = composition.compose_windowed(
        [(o, np.asarray(p, dtype=np.longdouble)) for o, p in pmfs], TAIL
    )
    assert reference[0] == result[0] and reference[1].size == result[1].size  # same windows
    return float(np.sum(np.abs(result[1].astype(np.longdouble) - reference[1])))


def _linear_support(pmfs) -> int:
    return sum(np.asarray(p).size for _, p in pmfs) - len(pmfs) + 1


@pytest.mark.parametrize("case", list(CASES))
def test_windowed_tree_within_the_bound(case):
    """The computed tree is within its bound of the extended-precision tree."""
    pmfs = CASES[case]()
    result = composition.compose_windowed(pmfs, TAIL)
    if case != "Laplace upper pmfs":  # that one fits its linear support: no fold
        assert result[1].size < _linear_support(pmfs)  # the windows did fold
    observed = _observed(pmfs, result)
    assert 0 < observed <= result[4], (observed, result[4])


def _model_error(n: int) -> float:
    levels = MODEL_ULPS * math.log2(max(2, n)) * U
    return levels / (1.0 - levels)


def _rfft(x, n=None, axis=-1):
    """A real FFT off by the largest L2 error the model admits, all at frequency 0."""
    assert axis in (-1, 1)
    n = x.shape[-1] if n is None else n
    spectrum = scipy.fft.rfft(x, n=n, axis=axis)
    norm = np.sqrt(np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=-1))
    spectrum[..., 0] += _model_error(n) * math.sqrt(n) * norm
    return spectrum


def _irfft(spectrum, n, axis=-1):
    """An inverse off by the largest L2 error the model admits, spread evenly."""
    out = scipy.fft.irfft(spectrum, n=n, axis=axis)
    g = _model_error(n)
    norm = np.sqrt(np.sum(out**2, axis=-1, keepdims=True))
    return out + (g + U * (1 + g)) * norm / math.sqrt(n)


@pytest.mark.parametrize("case", list(CASES))
def test_bound_covers_admissible_fft_errors(case, monkeypatch):
    """Every transform off by the model's whole error, where it harms most: within the bound.

    An error at frequency 0 moves every output point of a product the same way, so it
    reaches the bound's Cauchy-Schwarz step and is carried undiminished up the tree.
    """
    pmfs = CASES[case]()
    fake = types.SimpleNamespace(
        fft=types.SimpleNamespace(rfft=_rfft, irfft=_irfft, next_fast_len=scipy.fft.next_fast_len)
    )
    monkeypatch.setattr(composition, "scipy", fake)
    result = composition.compose_windowed(pmfs, TAIL)
    monkeypatch.undo()
    observed = _observed(pmfs, result)
    # the injected errors reach a good part of the bound (so a smaller constant fails)
    assert 0.55 * result[4] <= observed <= result[4], (observed, result[4])


def test_fold_charge_covers_an_adversarial_sum():
    """Folding 1, u/2... onto one point loses every small term: the charge covers it."""
    length = 4
    p = np.full(3 * length, U)
    p[:length] = 1.0
    folded = p.reshape(-1, length).sum(axis=0)  # the tree's fold of a whole number of rows
    exact = np.full(length, 1.0 + 2 * U, dtype=np.longdouble)
    observed = float(np.sum(np.abs(folded.astype(np.longdouble) - exact)))
    assert observed > 0  # the float sums did round
    charge = float(composition.fold_roundoff(p.size, length, float(np.sum(p))))
    assert observed <= charge < 1.5 * observed


def test_margin_carries_the_tree_bound(monkeypatch):
    """A composition on the windowed tree has the tree's round-off bound in its margin."""
    monkeypatch.setattr(composition, "_LAPLACE_ROUTE", False)  # plain Laplace: tree forced
    a = np.random.default_rng(8).uniform(0.002, 0.08, 64)
    acc = compose_accounting([LaplaceComponent(float(x)) for x in a], discretization=1e-3)
    for pld, estimate in ((acc.upper_pld, "pessimistic"), (acc.lower_pld, "optimistic")):
        pmfs, errors = laplace_components(a, 1e-3, estimate)
        bound = composition.compose_windowed(pmfs, TAIL / 2)[4]
        assert bound > pld.probs.size * 2.0**-52  # concentrated leaves: above the old N eps
        assert pld.margin >= bound + float(np.sum(errors))
