"""Data of Lin & Reimherr's Fig. 3 (1-D KDE: ICLP-QR, FRL, Bernstein) and of the MSE panels of
Figs. 7-9 (App. D.1 t5 errors, App. D.2 Matern 5/2), from :mod:`mechanisms.iclp.figures`.

Key numbers: the Bernstein privacy error against an independent oracle (scipy's binomial pmf:
``2 b^2 sum_nu int B_nu^2`` with ``b = 2 tau (K+1)/(n eps)``); the FRL privacy error against
Thm 7's FRL term ``8 M^3 tau^2/(n eps)^2``; ICLP's Monte Carlo privacy error within 25 % of
``sigma^2 tr C`` bounds (below ``sigma^2``, the trace of the unit-diagonal Gaussian kernel on
[0, 1]); and the orderings the paper reports: ICLP-AR has the largest MSE in every setting, and
the noise-dominated MSEs fall with n.
"""

import math

import numpy as np
import pytest
import scipy.stats

from mechanisms.iclp.figures import KDE_METHODS, kde_comparison_1d, mean_mse_by_n

# each figure builds several catalogue mechanisms and draws from them: 1-3 min CPU under load
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fig3():
    return kde_comparison_1d(n=500, draws=20, seed=3)


def test_fig3_bernstein_and_frl_privacy_errors_are_the_closed_forms(fig3):
    t = fig3["t"]
    h = fig3["bandwidth"]
    for k in (10, 30, 50):
        b = 2 * (1 / (math.sqrt(2 * math.pi) * h)) * (k + 1) / 500
        pmf = scipy.stats.binom.pmf(np.arange(k + 1)[None, :], k, t[:, None])
        oracle = 2 * b**2 * np.sum(np.mean(pmf**2, axis=0))
        assert fig3[f"Bernstein K={k}"]["privacy_error"] == pytest.approx(oracle, rel=1e-9)
    frl = fig3["FRL"]
    m = 3  # PSS truncation at n = 500 (pss_frl_components(500, 1, beta=4, eta=1.5))
    tau = (2 * math.sqrt(math.pi) * h) ** -0.5
    assert frl["privacy_error"] == pytest.approx(8 * m**3 * tau**2 / 500**2, rel=1e-12)
    for method in KDE_METHODS:
        assert fig3[method]["releases"].shape == (20, t.shape[0])
        assert fig3[method]["summary"].shape == t.shape


def test_fig3_iclp_is_the_least_noisy_and_bernstein_noise_grows_with_k(fig3):
    errors = {m: fig3[m]["privacy_error"] for m in KDE_METHODS}
    assert errors["ICLP-QR eta=1.5"] < errors["ICLP-QR eta=1.25"] < errors["Bernstein K=10"]
    assert errors["Bernstein K=10"] < errors["Bernstein K=30"] < errors["Bernstein K=50"]
    assert errors["ICLP-QR eta=1.25"] < errors["FRL"]


def _check_panel(panel):
    assert panel["ICLP-AR"][0] == max(
        panel[m][0] for m in ("FRL", "ICLP-AR", "ICLP-QR", "Bernstein")
    )
    for method in ("ICLP-AR", "ICLP-QR", "Bernstein"):
        assert panel[method][1] < panel[method][0]


def test_fig9_panel_matern_five_halves_with_t5_errors():
    panel = mean_mse_by_n((100, 1000), errors="t5", nu=2.5, reps=1, seed=0)
    assert panel["beta"] == pytest.approx(6.0) and panel["eta"] == pytest.approx(4 / 3)
    _check_panel(panel)


@pytest.mark.parametrize(("nu", "errors"), [(1.5, "t5"), (2.5, "rbf")])
def test_fig7_and_fig8_panels(nu, errors):
    _check_panel(mean_mse_by_n((100, 1000), errors=errors, nu=nu, reps=2, seed=5))
