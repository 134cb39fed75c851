"""The effective sample size and MCSE written with numpy are ArviZ's numbers (when installed)."""

import numpy as np
import pytest

from dpaudit.estimation.diagnostics import ess_bulk, mcse_mean

az = pytest.importorskip("arviz")


def _cases():
    rng = np.random.default_rng(7)
    iid = rng.normal(size=(4, 2500))
    # hockey-stick terms: mostly exact zeros (many ties), a few in (0, 1)
    terms = np.where(rng.random((4, 3001)) < 0.9, 0.0, rng.random((4, 3001)))
    correlated = np.cumsum(rng.normal(size=(4, 400)), axis=1)  # a random walk: small ESS
    return {"iid": iid, "ties": terms, "correlated": correlated, "short": iid[:, :5]}


@pytest.mark.parametrize("name", ["iid", "ties", "correlated", "short"])
def test_ess_and_mcse_are_arviz_numbers(name):
    draws = _cases()[name]
    assert ess_bulk(draws) == pytest.approx(float(az.ess(draws)), rel=1e-12)
    assert mcse_mean(draws) == pytest.approx(float(az.mcse(draws)), rel=1e-12)


def test_too_few_draws_and_nan_give_nan():
    assert np.isnan(ess_bulk(np.ones((4, 3)))) and np.isnan(mcse_mean(np.ones((4, 3))))
    with_nan = np.ones((4, 10))
    with_nan[0, 0] = np.nan
    assert np.isnan(ess_bulk(with_nan))
    with pytest.raises(ValueError, match="draws"):
        ess_bulk(np.ones(10))
