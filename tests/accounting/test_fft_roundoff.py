"""The FFT convolution trees' round-off bound (``compose_pmfs_bounded``) against its model.

The bound rests on one assumption, the FFT error model (a computed real FFT of length
``n`` is within ``FFT_ULPS_PER_LEVEL log2(n) u`` of the exact one in L2, relative), and
on a derivation from it (docs/composition.md, "Round-off of the convolution trees").
The model is checked here against extended-precision transforms; the derivation against
spectrum errors the model admits, placed where they do the most harm (at frequency 0,
where a non-negative operand's spectrum is largest, so the error reaches every output
point); the composition against exact references, including concentrated operands for
which the former ``N eps`` charge was below the bound.

Mutation checks: ``fft_convolution_error`` without ``sqrt(support)``, or without either
cross term ``err_a * l1_b`` / ``l1_a * err_b``, fails
``test_bound_covers_admissible_spectrum_errors``; ``_tree_level`` or the heap without the
propagated errors fails ``test_tree_carries_the_errors_of_its_operands``.
"""

import math

import numpy as np
import pytest
import scipy.fft

from dpaudit.accounting import composition, profiles
from dpaudit.accounting.profiles import compose_pmfs_bounded, fft_convolution_error

U = 2.0**-53
EXTENDED = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps


def _level_error(n: int) -> float:
    levels = profiles.FFT_ULPS_PER_LEVEL * math.log2(n) * U
    return levels / (1.0 - levels)


@pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")
@pytest.mark.parametrize("n", [96, 625, 4096, 20_000, 59_049])
def test_fft_model_against_extended_precision(n):
    """Forward and inverse transforms of spread and spiky inputs are within the model."""
    rng = np.random.default_rng(n)
    spike = np.full(n, 1e-3 / n)
    spike[n // 3] = 1.0
    for x in (rng.random(n), spike, np.exp(-np.arange(n) / 50.0)):
        exact = scipy.fft.rfft(x.astype(np.longdouble))
        forward = np.linalg.norm((scipy.fft.rfft(x) - exact).astype(np.clongdouble))
        assert float(forward / np.linalg.norm(exact)) <= _level_error(n)
        spectrum = exact.astype(complex)  # an inverse of a float64 spectrum
        reference = scipy.fft.irfft(spectrum.astype(np.clongdouble), n=n)
        inverse = np.linalg.norm(scipy.fft.irfft(spectrum, n=n) - reference)
        assert float(inverse / np.linalg.norm(reference)) <= _level_error(n)


def _two_point(n: int, first: float) -> np.ndarray:
    p = np.zeros(n)
    p[0], p[-1] = first, 1.0 - first
    return p


def _wide(n: int) -> np.ndarray:
    p = np.random.default_rng(n).random(n)
    return p / p.sum()


OPERANDS = {
    "concentrated * wide": (lambda n: _two_point(n, 0.999), _wide),
    "wide * concentrated": (_wide, lambda n: _two_point(n, 0.999)),
    "concentrated * concentrated": (lambda n: _two_point(n, 0.6), lambda n: _two_point(n, 0.9)),
    "wide * wide": (_wide, lambda n: _wide(n + 1)[:n] / _wide(n + 1)[:n].sum()),
}


def _norms(p):
    return float(np.sum(np.abs(p))), math.sqrt(float(p @ p))


@pytest.mark.parametrize("which", ["a", "b", "both"])
@pytest.mark.parametrize("case", list(OPERANDS))
def test_bound_covers_admissible_spectrum_errors(case, which):
    """Spectrum errors of the full admitted size at frequency 0 stay within the bound."""
    n = 3000
    a, b = (make(n) for make in OPERANDS[case])
    support = 2 * n - 1
    n_fft = scipy.fft.next_fast_len(support, real=True)
    g = _level_error(n_fft)
    spec_a, spec_b = scipy.fft.rfft(a, n=n_fft), scipy.fft.rfft(b, n=n_fft)
    # ||F x||_2 = sqrt(n) ||x||_2: an error of g times that, all at frequency 0
    if which in ("a", "both"):
        spec_a[0] += g * math.sqrt(n_fft) * math.sqrt(float(a @ a))
    if which in ("b", "both"):
        spec_b[0] += g * math.sqrt(n_fft) * math.sqrt(float(b @ b))
    out = np.maximum(scipy.fft.irfft(spec_a * spec_b, n=n_fft)[:support], 0.0)
    exact = np.convolve(a.astype(np.longdouble), b.astype(np.longdouble))
    observed = float(np.sum(np.abs(out - exact)))
    bound = float(fft_convolution_error(*_norms(a), *_norms(b), n_fft, support))
    assert observed <= bound, (observed, bound)


def _exact(components):
    offset, out = 0, np.ones(1, dtype=np.longdouble)
    for o, p in components:
        out, offset = np.convolve(out, np.asarray(p, dtype=np.longdouble)), offset + o
    return offset, out


def _distance(result, reference) -> float:
    (offset, probs), (ref_offset, exact) = result, reference
    assert offset == ref_offset and probs.size <= exact.size
    head = np.zeros(exact.size, dtype=np.longdouble)
    head[: probs.size] = probs
    return float(np.sum(np.abs(head - exact)))


@pytest.mark.parametrize("case", list(OPERANDS))
def test_concentrated_operands_within_the_bound(case):
    """Two pmfs of 20 000 points (one batched FFT) against the exact product."""
    n = 20_000
    a, b = (make(n) for make in OPERANDS[case])
    offset, probs, bound = compose_pmfs_bounded([(0, a), (3, b)])
    observed = _distance((offset, probs), _exact([(0, a), (3, b)]))
    assert observed <= bound, (observed, bound)
    if case == "concentrated * concentrated":  # where the former N eps fell short of it
        assert bound > probs.size * np.finfo(float).eps


def test_tree_carries_the_errors_of_its_operands(monkeypatch):
    """Composing four parts costs at least the two pairs' errors (each carried at mass 1)."""
    monkeypatch.setattr(profiles, "prefer_multiway", lambda lengths: False)  # the tree itself
    rng = np.random.default_rng(5)
    parts = [(0, p / p.sum()) for p in rng.random((4, 5000))]
    bound = compose_pmfs_bounded(parts)[2]
    pairs = compose_pmfs_bounded(parts[:2])[2] + compose_pmfs_bounded(parts[2:])[2]
    assert bound >= pairs * (1 - 1e-9)
    # a second length class (one point): the heap carries the tree's error through its product
    heap = [parts[0], (7, np.ones(1)), parts[2]]
    assert compose_pmfs_bounded(heap)[2] >= compose_pmfs_bounded(heap[::2])[2] * (1 - 1e-9)


@pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")
def test_mixed_tree_within_the_bound():
    """Batched trees of several length classes, direct and FFT products, then the heap."""
    rng = np.random.default_rng(11)
    sizes = [2, 3, 9, 17, 40, 70, 130, 300, 301, 1200, 1500, 4000]
    parts = []
    for i, m in enumerate(sizes):
        p = rng.random(m) ** 8  # spiky
        parts.append((i - 3, p / p.sum()))
    offset, probs, bound = compose_pmfs_bounded(parts)
    assert _distance((offset, probs), _exact(parts)) <= bound
    assert bound > 0


# ---------------------------------------------------------------- multi-way products


def _spread(n: int, seed: int) -> np.ndarray:
    p = np.random.default_rng(seed).random(n)
    return p / p.sum()


MULTIWAY = {
    "concentrated": [_two_point(400, 0.6), _two_point(300, 0.9), _two_point(500, 0.999)],
    "mixed": [_two_point(400, 0.999), _spread(700, 1), _spread(200, 2), _two_point(50, 0.5)],
    "spread": [_spread(n, n) for n in (100, 150, 220, 330, 500)],
}


@pytest.mark.parametrize("case", list(MULTIWAY))
def test_multiway_bound_covers_admissible_spectrum_errors(case):
    """Every spectrum off by its full admitted error at frequency 0: the product stays within."""
    rows = MULTIWAY[case]
    support = sum(p.size for p in rows) - len(rows) + 1
    n_fft = scipy.fft.next_fast_len(support, real=True)
    g = _level_error(n_fft)
    spectrum = np.ones(n_fft // 2 + 1, dtype=complex)
    for p in rows:
        spec = scipy.fft.rfft(p, n=n_fft)
        spec[0] += g * math.sqrt(n_fft) * math.sqrt(float(p @ p))
        spectrum *= spec
    out = np.maximum(scipy.fft.irfft(spectrum, n=n_fft)[:support], 0.0)
    _, exact = _exact([(0, p) for p in rows])
    observed = float(np.sum(np.abs(out - exact)))
    l1, l2 = zip(*(_norms(p) for p in rows), strict=True)
    bound = profiles.fft_product_error(np.array(l1), np.array(l2), n_fft, support)
    assert observed <= bound, (observed, bound)


def test_multiway_bound_of_two_rows_is_the_pairwise_bound():
    """With two rows the multi-way bound is the pairwise one (the rounding term's min aside)."""
    a, b = _wide(3000), _two_point(2000, 0.7)
    n_fft = scipy.fft.next_fast_len(4999, real=True)
    pair = float(fft_convolution_error(*_norms(a), *_norms(b), n_fft, 4999))
    l1, l2 = zip(_norms(a), _norms(b), strict=True)
    multi = profiles.fft_product_error(np.array(l1), np.array(l2), n_fft, 4999)
    assert 0.95 * pair <= multi <= pair * (1 + 1e-12)


@pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")
def test_multiway_classes_within_the_bound(monkeypatch):
    """Length classes composed by multi-way products, then the heap, against the exact product."""
    calls = []
    real = profiles.prefer_multiway

    def recorded(lengths):
        calls.append(real(lengths))
        return calls[-1]

    monkeypatch.setattr(profiles, "prefer_multiway", recorded)
    rng = np.random.default_rng(3)
    parts = []
    for i, m in enumerate([9, 10, 12, 14, 15, 16, 40, 41, 50, 60, 64, 300, 400]):
        p = rng.random(m) ** 8
        parts.append((i - 5, p / p.sum()))
    offset, probs, bound = compose_pmfs_bounded(parts)
    assert any(calls), "no class took the multi-way product"
    assert _distance((offset, probs), _exact(parts)) <= bound


def test_prefer_multiway_for_few_similar_rows_only():
    """The cost model: few rows of similar length multiply at once, a thousand rows take the tree."""
    assert profiles.prefer_multiway(np.arange(9, 17))
    assert not profiles.prefer_multiway(np.full(1000, 12))


# ------------------------------------------------------- the power path (equal parts)


@pytest.mark.parametrize("n", [96, 4096, 54_001])
def test_power_path_assumes_the_trees_fft_constant(n):
    """The power path's per-coefficient FFT error is the trees' per-level model.

    Mutation: the former ``4 eps log2(n) ||p||_1`` (8 u per level) fails here.
    """
    assert composition.fft_coefficient_error(1.0, n) == _level_error(n)
    assert composition.fft_coefficient_error(0.5, n) == 0.5 * _level_error(n)


def test_power_path_charges_both_transforms_by_the_model(monkeypatch):
    """``self_compose_pmf`` takes its forward (componentwise) and inverse (normwise) FFT
    errors from the model: one call each, at the transform's length.

    Mutation: either charge written inline again (e.g. ``4 * _EPS * log_n``) fails here.
    """
    calls = []

    def spy(l1, n_fft):
        calls.append((l1, n_fft))
        return _level_error(n_fft) * l1

    monkeypatch.setattr(composition, "fft_coefficient_error", spy)
    p = np.random.default_rng(7).random(40)
    p /= p.sum()
    composition.self_compose_pmf(0, p, 25, 0.01, 1e-15)
    assert len(calls) == 2 and calls[0][1] == calls[1][1]
    assert calls[0][0] == pytest.approx(float(np.sum(p)), rel=1e-12)  # forward: ||p||_1
    assert calls[1][0] == 1.0  # inverse: relative to the output's L2 norm


def _spiky(m: int) -> np.ndarray:
    p = np.full(m, 1e-4)
    p[m // 3] = 1.0
    return p / p.sum()


def _uniform(m: int) -> np.ndarray:
    p = np.random.default_rng(m).random(m)
    return p / p.sum()


@pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")
@pytest.mark.parametrize("make", [_uniform, _spiky])
@pytest.mark.parametrize("m", [40, 301])
def test_forward_coefficients_within_the_componentwise_model(make, m):
    """Every coefficient of a real FFT (lengths of the power path's kind) against extended
    precision: within ``fft_coefficient_error``."""
    p = make(m)
    for n_fft in (scipy.fft.next_fast_len(25 * m, real=True), 8192):
        exact = scipy.fft.rfft(p.astype(np.longdouble), n=n_fft)
        error = np.max(np.abs((scipy.fft.rfft(p, n=n_fft) - exact).astype(np.clongdouble)))
        assert float(error) <= composition.fft_coefficient_error(float(np.sum(p)), n_fft)


@pytest.mark.skipif(not EXTENDED, reason="no extended precision on this platform")
@pytest.mark.parametrize("make", [_uniform, _spiky])
@pytest.mark.parametrize("count", [25, 200])
def test_power_within_its_margin_against_extended_precision(make, count):
    """The ``count``-fold power against the exact convolution power (extended precision):
    the L1 distance, window and dropped coefficients included, is within the margin."""
    p = make(40)
    offset, out, margin = composition.self_compose_pmf(-3, p, count, 0.01, 1e-15)
    reference = (-3 * count, np.ones(1, dtype=np.longdouble))
    exact = reference[1]
    for _ in range(count):
        exact = np.convolve(exact, p.astype(np.longdouble))
    start = offset - reference[0]
    full = np.zeros(exact.size, dtype=np.longdouble)
    full[start : start + out.size] = out
    observed = float(np.sum(np.abs(full - exact)))
    assert observed <= margin, (observed, margin)


def test_power_path_charges_the_products_of_the_squaring(monkeypatch):
    """With the FFT model set to 0 the margin still holds the ``k - 1`` complex products'
    ``3 (k - 1) u`` relative error of the power (at least at frequency 0, counted twice).

    Mutation: the products' charge left out fails here.
    """
    monkeypatch.setattr(composition, "FFT_ULPS_PER_LEVEL", 0.0)
    p = _uniform(40)
    count = 1000
    _, _, margin = composition.self_compose_pmf(0, p, count, 0.01, 1e-30)
    assert margin >= 3 * (count - 1) * U * math.sqrt(2.0) * 0.99
