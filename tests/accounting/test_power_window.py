"""The power path's Chernoff window (``self_compose_pmf``): valid windows from the log-MGF.

The window's log-moment-generating functions are one ``exp`` per (order, support point) and
a product with the pmf (no log of the pmf, no running maximum); exponents that could
overflow take the stable log-sum-exp instead. Both must give windows whose tails are
really below what is charged.
"""

import numpy as np
import pytest

from dpaudit.accounting.composition import GaussianComponent, self_compose_pmf
from dpaudit.accounting.subsampling import subsampled_component


def _power(probs, count):
    out = np.ones(1)
    for _ in range(count):
        out = np.convolve(out, probs)
    return out


def _within(offset, probs, count, tail):
    off, out, margin = self_compose_pmf(offset, probs, count, 1e-4, tail)
    exact = _power(probs, count)
    start = off - offset * count
    assert 0 <= start and start + out.size <= exact.size
    kept = exact[start : start + out.size]
    outside = float(np.sum(exact) - np.sum(kept))
    assert np.all(np.isfinite(out)) and np.isfinite(margin)
    assert float(np.sum(np.abs(out - kept))) + outside <= margin
    return off, out, margin


def test_skewed_pmf_takes_the_stable_log_mgf():
    """A far, tiny atom: exponents of ~1e7 would overflow the direct sum; the window holds."""
    probs = np.zeros(2_001)
    probs[0], probs[-1] = 1.0 - 1e-12, 1e-12
    _, out, margin = _within(0, probs, 3, 1e-15)
    assert np.isfinite(margin) and out.size >= 1


@pytest.mark.parametrize("forward", [True, False])
def test_subsampled_gaussian_window_is_valid(forward):
    """DP-SGD's part (q = 0.01, mu = 1) on a coarse grid, 40 copies: exact mass outside <= margin."""
    comp = subsampled_component(GaussianComponent(1.0), 0.01)
    offset, probs, _ = comp.upper_pmf(2e-2, 1e-12, forward)
    _, out, _ = _within(offset, probs, 40, 1e-12)
    assert out.size < 40 * (probs.size - 1) + 1  # the window cut something
