"""One focused test per stage of the black-box pipeline, on hand-made inputs (fast).

Selection on hand-made score arrays, certification counts on a deterministic
sampler, result records, the deprecated ``method=`` keyword, and the chunked
release source.
"""

import jax
import numpy as np
import pytest

import dpaudit
from dpaudit.blackbox import blackbox_audit
from dpaudit.blackbox.certification import count_event
from dpaudit.blackbox.result import SelectedEvent, selection_epsilon, verdict_notes
from dpaudit.blackbox.samplers import ReleaseSource, chunks_of
from dpaudit.blackbox.selection import candidate_events, resolve_objective, select_event
from dpaudit.blackbox.statistics import STATISTIC_RESOLUTION, classifier_settings, snap
from dpaudit.estimation.bounds import certified_epsilon, one_sided_pair

D0, D1 = np.zeros(3), np.array([1.0, 0.0, 0.0])


def _ok_sampler(data, n, key):
    return np.asarray(jax.random.normal(key, (n, 1))) + float(np.sum(data))


# ------------------------------------------------------------------ selection


def test_selection_picks_the_threshold_that_separates_hand_made_scores():
    """Scores 1 on 10 % of D's releases and 1 % of D''s: the event {s > 0} (gamma 0) is best."""
    s_d = np.repeat([0.0, 1.0], [900, 100])
    s_dp = np.repeat([0.0, 1.0], [990, 10])
    best = select_event([(s_d, s_dp)], 1000, 10_000, dpaudit.Claim(1.0), "epsilon", 0.05)
    assert (best.pair, best.direction, best.threshold, best.gamma) == (0, 0, 0.0, 0.0)
    assert (best.p_hat, best.q_hat) == (0.1, 0.01)


def test_selection_takes_the_reverse_direction_when_d_prime_is_the_outlier():
    """Low scores (log-odds of D against D') on 10 % of D''s releases and 1 % of D's: the event
    {-s > 0} with P = P_D' (direction D'->D)."""
    s_d = np.repeat([0.0, -1.0], [990, 10])
    s_dp = np.repeat([0.0, -1.0], [900, 100])
    best = select_event([(s_d, s_dp)], 1000, 10_000, dpaudit.Claim(1.0), "epsilon", 0.05)
    assert (best.direction, best.threshold, best.gamma) == (1, 0.0, 0.0)
    assert (best.p_hat, best.q_hat) == (0.1, 0.01)


def test_selection_picks_the_informative_pair():
    informative = (np.repeat([0.0, 1.0], [900, 100]), np.repeat([0.0, 1.0], [990, 10]))
    useless = (np.zeros(1000), np.zeros(1000))
    best = select_event([useless, informative], 1000, 10_000, dpaudit.Claim(1.0), "epsilon", 0.05)
    assert best.pair == 1


def test_candidates_count_events_with_ties():
    t, g, k_p, k_q, q_is = candidate_events(np.array([0.0, 1.0, 1.0, 1.0]), np.array([1.0, 2.0]))
    rows = {
        (float(a), float(b)): (float(c), float(d))
        for a, b, c, d in zip(t, g, k_p, k_q, strict=True)
    }
    assert rows[(1.0, 0.0)] == (0.0, 1.0)  # {s > 1}
    assert rows[(1.0, 1.0)] == (3.0, 2.0)  # {s >= 1}
    assert rows[(1.0, 0.5)] == (1.5, 1.5)  # {s > 1} + half of {s = 1}: an atom of 4 releases
    assert np.isnan(q_is).all()  # no importance sampling without a privacy loss


def test_objective_auto_chooses_between_both_bounds_for_approximate_claims():
    assert resolve_objective("auto", dpaudit.Claim(1.0, 1e-3)) == "auto"
    assert resolve_objective("auto", dpaudit.Claim(1.0)) == "epsilon"
    assert resolve_objective("epsilon", dpaudit.Claim(1.0, 1e-3)) == "epsilon"


# ------------------------------------------------------------------ certification


def _counting_sampler(data, n, key):
    """Releases 0, 1, 2, ... in order whatever the key: counts are known exactly."""
    return np.arange(n, dtype=float)[:, None] + 1000 * float(np.sum(data))


def test_certification_counts_the_event_on_each_dataset():
    sources = (
        ReleaseSource(_counting_sampler, D0, "count", 40),
        ReleaseSource(_counting_sampler, D1, "count", 40),
    )
    keys = jax.random.split(jax.random.key(0), 3)
    # 100 releases in chunks of 40: values 0..39, 0..39, 0..19 (plus 1000 for D').
    selected = SelectedEvent(0.0, 0, 0, 89.0, 0.0, 0.1, 0.0)  # {s > 89}, P = P_D
    counts = count_event(selected, lambda x: x[:, 0], sources, 100, keys)
    assert counts.k_p == 0 and counts.k_q == 100
    selected = SelectedEvent(0.0, 0, 1, -1000.0, 1.0, 0.1, 0.0)  # {-s >= -1000}, P = P_D'
    counts = count_event(selected, lambda x: x[:, 0], sources, 100, keys)
    assert counts.k_p == 3 and counts.k_q == 100  # D': the three releases 1000 + 0 (ties kept)
    assert counts.scores_p.size == counts.scores_q.size == 100


def test_certification_resolves_ties_with_probability_gamma():
    source = ReleaseSource(lambda d, n, k: np.zeros((n, 1)), D0, "zeros", 1000)
    keys = jax.random.split(jax.random.key(1), 3)
    counts = count_event(
        SelectedEvent(0.0, 0, 0, 0.0, 0.5, 0.5, 0.5),
        lambda x: x[:, 0],
        (source, source),
        1000,
        keys,
    )
    assert 400 < counts.k_p < 600 and 400 < counts.k_q < 600


# ------------------------------------------------------------------ bounds and records


def test_one_sided_pair_splits_alpha_between_the_sides():
    p_lo, q_hi = one_sided_pair(500, 1000, 100, 1000, 0.95)
    assert float(certified_epsilon(500, 1000, 100, 1000)) == pytest.approx(
        float(np.log(p_lo) - np.log(q_hi))
    )


def test_selection_epsilon_and_notes():
    event = SelectedEvent(0.0, 0, 0, 0.0, 0.0, 0.5, 0.0)
    assert selection_epsilon(event, 0.0) == np.inf
    assert selection_epsilon(event._replace(q_hat=0.25), 0.0) == pytest.approx(np.log(2))
    assert selection_epsilon(event, 0.6) == 0.0
    notes = verdict_notes(dpaudit.Claim(1.0, 0.01), "delta", 2.0, 0.95, 10, 20)
    assert "objective 'delta'" in notes[0] and "Certified at confidence 0.95" in notes[1]


def test_statistics_are_snapped_to_the_resolution():
    s = snap(np.array([0.3, -np.inf, np.nan]))
    assert s[0] == np.round(0.3 / STATISTIC_RESOLUTION) * STATISTIC_RESOLUTION
    assert s[1] == -np.inf and np.isnan(s[2])
    with pytest.raises(ValueError, match="unknown classifier_options"):
        classifier_settings({"depth": 2})


def test_release_source_draws_in_chunks():
    source = ReleaseSource(_counting_sampler, D0, "count", 4)
    x = source.draw(10, jax.random.key(0))
    assert x[:, 0].tolist() == [0, 1, 2, 3] * 2 + [0, 1] and source.shape == (1,)
    assert chunks_of(10, 4) == 3 and chunks_of(3, 4) == 1


# ------------------------------------------------------------------ the statistic keyword


def test_method_is_a_deprecated_alias_of_statistic():
    kwargs = dict(samples=200, select_samples=100, progress=False)
    with pytest.warns(DeprecationWarning, match="statistic="):
        old = blackbox_audit(_ok_sampler, D0, D1, dpaudit.Claim(1.0), method="logistic", **kwargs)
    new = blackbox_audit(_ok_sampler, D0, D1, dpaudit.Claim(1.0), statistic="logistic", **kwargs)
    assert old.statistic == old.method == new.statistic == "logistic"
    assert old.route == "black-box (logistic)" and new.to_dict()["method"] == "logistic"
    assert old.event.counts == new.event.counts
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="not both"):
        blackbox_audit(_ok_sampler, D0, D1, dpaudit.Claim(1.0), method="mlp", statistic="logistic")
