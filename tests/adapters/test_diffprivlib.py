"""dpaudit.adapters.from_diffprivlib: models and tools with (X, y) data, seeded through random_state.

Skipped without diffprivlib (the ``libraries`` extra). Fast tests: the claim, the
neighbours' box, the release (a model's parameters), reproducibility from the key,
bad input. Slow tests: GaussianNB and LogisticRegression audited with (X, y) data at
their own epsilon (never a violation) and with the model's epsilon 4 times the claim
(a violation; for LogisticRegression a strict xfail: not caught at this budget).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import warnings

import jax
import numpy as np
import pytest

from dpaudit.adapters import from_diffprivlib, model_parameters
from dpaudit.blackbox import AutoPairs

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dpl = pytest.importorskip(
        "diffprivlib", reason="the 'libraries' extra is not installed", exc_type=ImportError
    )

_SKLEARN = tuple(int(p) for p in importlib.metadata.version("scikit-learn").split(".")[:2])
_X = np.linspace(0.0, 1.0, 10)[:, None]
_Y = np.array([0, 1] * 5)


def _logistic(epsilon):
    """diffprivlib 0.6.6's LogisticRegression; a skip only outside the extra's scikit-learn < 1.8.

    It passes ``multi_class=``, which scikit-learn 1.8 removed; the ``libraries`` extra caps
    scikit-learn below 1.8, so within the extra a failure to build it fails the test.
    """
    try:
        return dpl.models.LogisticRegression(epsilon=epsilon, data_norm=1.0)
    except TypeError as err:
        if _SKLEARN < (1, 8):
            raise
        pytest.skip(f"diffprivlib 0.6.6 LogisticRegression fails on scikit-learn >= 1.8: {err}")


def test_a_model_is_released_as_its_parameters_with_labelled_neighbours():
    target = from_diffprivlib(dpl.models.GaussianNB(epsilon=2.0, bounds=(0.0, 1.0)), (_X, _Y))
    assert (target.claim.epsilon, target.claim.adjacency) == (2.0, "replace-one")
    assert target.pairs == AutoPairs(kind="labelled", domain=(0.0, 1.0))
    releases = target.sampler(target.data, 3, jax.random.key(0))
    assert releases.shape == (3, 8)  # theta_, var_, class_count_, class_prior_: 2 each
    np.testing.assert_array_equal(releases, target.sampler(target.data, 3, jax.random.key(0)))
    assert not np.array_equal(releases, target.sampler(target.data, 3, jax.random.key(1)))
    assert "theta_" in target.notes[0] and "random_state" in target.notes[0]


def test_a_refit_runs_on_one_blas_thread(monkeypatch):
    """A refit is small algebra, far slower on a multi-threaded BLAS on a loaded machine."""
    import threadpoolctl

    seen = []
    fit = dpl.models.GaussianNB.fit

    def recording_fit(self, *args, **kwargs):
        blas = threadpoolctl.threadpool_info()
        seen.append(max(i["num_threads"] for i in blas if i["user_api"] == "blas"))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(dpl.models.GaussianNB, "fit", recording_fit)
    target = from_diffprivlib(dpl.models.GaussianNB(epsilon=2.0, bounds=(0.0, 1.0)), (_X, _Y))
    seen.clear()  # the adapter's own fit naming the parameters
    target.sampler(target.data, 2, jax.random.key(0))
    assert seen == [1, 1]


def test_logistic_regression_is_released_as_coefficients_and_intercept():
    target = from_diffprivlib(_logistic(2.0), (_X, _Y))
    assert (target.claim.epsilon, target.claim.adjacency) == (2.0, "replace-one")
    releases = target.sampler(target.data, 3, jax.random.key(0))
    assert releases.shape == (3, 2)  # coef_ (one feature) and intercept_
    np.testing.assert_array_equal(releases, target.sampler(target.data, 3, jax.random.key(0)))


def test_model_parameters_are_the_fitted_floats_by_name():
    fitted = dpl.models.GaussianNB(epsilon=1.0, bounds=(0.0, 1.0), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(_X, _Y)
    expected = np.concatenate(
        [fitted.class_count_, fitted.class_prior_, fitted.theta_.ravel(), fitted.var_.ravel()]
    )
    np.testing.assert_array_equal(model_parameters(fitted), expected)


def test_tools_take_their_claim_and_box_from_their_arguments():
    mean = from_diffprivlib(dpl.tools.mean, _X[:, 0], epsilon=1.0, bounds=(0.0, 1.0))
    assert (mean.claim.adjacency, mean.pairs.domain) == ("replace-one", (0.0, 1.0))
    hist = from_diffprivlib(dpl.tools.histogram, _X[:, 0], epsilon=1.0, bins=4, range=(0, 1))
    assert hist.claim.adjacency == "add-remove"
    assert hist.sampler(hist.data, 2, jax.random.key(0)).shape == (2, 4)
    var = from_diffprivlib(dpl.tools.var, _X[:, 0], epsilon=0.5, bounds=(0.0, 1.0))
    assert var.claim.epsilon == 0.5


def test_bad_diffprivlib_input_gets_one_sentence_each():
    with pytest.raises(TypeError, match=r"audited on data=\(X, y\)"):
        from_diffprivlib(dpl.models.GaussianNB(epsilon=1.0, bounds=(0.0, 1.0)), _X)
    with pytest.raises(ValueError, match=r"declares no bounds or data_norm: pass domain="):
        from_diffprivlib(dpl.models.GaussianNB(epsilon=1.0), (_X, _Y))
    with pytest.raises(ValueError, match=r"tools.mean was given no bounds="):
        from_diffprivlib(dpl.tools.mean, _X[:, 0], epsilon=1.0)
    with pytest.raises(ValueError, match=r"tools.mean needs epsilon="):
        from_diffprivlib(dpl.tools.mean, _X[:, 0], bounds=(0.0, 1.0))
    with pytest.raises(TypeError, match=r"needs a diffprivlib model instance or tool function"):
        from_diffprivlib(dpl.models.GaussianNB, (_X, _Y))
    with pytest.raises(ValueError, match=r"X of shape \(n, d\)"):
        from_diffprivlib(dpl.models.GaussianNB(epsilon=1.0, bounds=(0, 1)), (_X[:, 0], _Y))


def _audit(model, claimed=None):
    """Audit a refitted model (the adapter refits on one BLAS thread: LogisticRegression's L-BFGS-B calls
    OpenBLAS a few thousand times per fit on two parameters, and a multi-threaded OpenBLAS
    stalls at each call on a busy machine (163 ms per fit against 6.6 ms on one thread, load
    18 on 2 cores: two audits of ~15 000 refits each took 80 min instead of 3))."""
    target = from_diffprivlib(model, (_X, _Y))
    if claimed is not None:
        target = dataclasses.replace(
            target, claim=dataclasses.replace(target.claim, epsilon=claimed)
        )
    return target.audit(samples=3_000, select_samples=800, seed=5, progress=False)


@pytest.mark.slow
def test_gaussian_nb_with_xy_data_correct_never_a_violation_and_4x_epsilon_caught():
    correct = _audit(dpl.models.GaussianNB(epsilon=1.0, bounds=(0.0, 1.0)))
    assert correct.verdict == "inconclusive" and correct.reproducible
    wrong = _audit(dpl.models.GaussianNB(epsilon=4.0, bounds=(0.0, 1.0)), claimed=1.0)
    assert wrong.verdict == "violation", wrong.notes


@pytest.mark.slow
def test_logistic_regression_with_xy_data_correct_is_never_a_violation():
    assert _audit(_logistic(1.0)).verdict == "inconclusive"


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="never ran to the end before session 12 (one audit took ~40 min CPU on a "
    "multi-threaded BLAS); once it did: the model at epsilon 4 claimed at 1 is inconclusive at "
    "3000 samples (certified lower bound 0.744, audit strength 1.07): on these 10 records "
    "objective perturbation's observable loss looks far below 4; a tighter case is open. "
    "Strict, so an audit that catches it fails here until the mark is removed.",
)
def test_logistic_regression_with_xy_data_4x_epsilon_caught():
    assert _audit(_logistic(4.0), claimed=1.0).verdict == "violation"
