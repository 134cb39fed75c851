"""The shipped audits of python-dp (audits/libraries/pydp_primitives.py).

Skipped without the ``libraries`` extra. The fast tests check one cheap violation, that
the float reachability statistic refuses python-dp's releases (its sampler is not
numpy's Laplace arithmetic) instead of reporting on them, and that python-dp's Laplace
releases sit on its power-of-two granularity (the fix of the precision attacks) while its
Gaussian releases do not; the slow test runs every audit at its shipped budget and
statistic.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pydp", reason="the 'libraries' extra is not installed")

_PATH = Path(__file__).resolve().parents[2] / "audits" / "libraries" / "pydp_primitives.py"


def _module():
    spec = importlib.util.spec_from_file_location("pydp_primitives", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("pydp_primitives", module)
    spec.loader.exec_module(module)
    return module


LIB = _module()


def test_sensitivity_two_passed_as_one_is_a_violation():
    """True epsilon 2 against the claimed 1, at 5000 + 2000 releases."""
    res = LIB.run(LIB.audit_named("laplace-sensitivity-2"), samples=5_000, select_samples=2_000)
    assert res.verdict == "violation" and not res.reproducible


def test_float_reachability_refuses_a_sampler_it_does_not_model():
    with pytest.raises(ValueError, match="no numpy Laplace arithmetic"):
        LIB.run(LIB.audit_named("laplace"), samples=500, select_samples=500, statistic="float")


def test_laplace_releases_lie_on_the_granularity_lattice():
    """Releases of 0 and of 2^-45 are multiples of 2^-40: the inputs are rounded first."""
    for answer in LIB.audit_named("laplace-fine-input").inputs:
        release = LIB.laplace()
        x = np.array([release(answer) for _ in range(500)])
        assert np.all(x * 2.0**40 == np.round(x * 2.0**40))


def test_gaussian_releases_of_zero_hold_bits_no_release_of_one_can():
    """The precision attack the "bits" audit certifies, counted directly on 3000 releases.

    A release of 0 in (1/4, 1/2) is an odd multiple of 2^-54 with probability about 1/2
    (such releases are about 5 % of all); ``1 + z`` there is a multiple of 2^-53.
    """
    release = LIB.gaussian()

    def odd_fine(answer):
        x = np.array([release(answer) for _ in range(3000)])
        x = x[(x > 0.25) & (x < 0.5)] * 2.0**54
        return int(np.sum(x % 2 == 1))

    assert odd_fine(0.0) > 0 and odd_fine(1.0) == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", [a.name for a in LIB.AUDITS])
def test_every_pydp_audit_gives_its_expected_verdict(name):
    audit = LIB.audit_named(name)
    res = LIB.run(audit)
    assert res.verdict == audit.expected, res.notes
