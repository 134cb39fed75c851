"""Automatic neighbours (``pairs="auto"`` / ``AutoPairs``): candidates, detection, validity, bad input.

Candidate generation is pinned pair by pair on small inputs (the expected pairs
are written out by hand from StatDP's / DP-Sniper's pattern list and the
adjacency relations). Detection: report-noisy-max returning the noisy maximum,
claimed epsilon-DP under linf sensitivity 1 with Laplace noise of scale 2/eps,
has true epsilon k eps / 2 (attained when every answer moves: the tools' "all
above" pattern) but at most eps / 2 on the trivial pair that moves one answer,
so only the automatic candidates can certify the violation. Validity: a correct,
tight Laplace histogram under replace-one (30 candidate moves) never certifies
above its true epsilon more often than the 5 % the confidence level allows.
Seeds were not tuned (the first tried).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.stats
from spec_fixtures import BLACK_BOX_SPEC as SPEC
from spec_fixtures import SAMPLER, write_spec

import dpaudit
from dpaudit.blackbox import AutoPairs, blackbox_audit, numpy_generator
from dpaudit.blackbox.autopairs import auto_pairs
from dpaudit.cli.main import main
from dpaudit.io.spec import SpecError, load_spec
from dpaudit.model.adjacency import check_adjacent

LINF = dpaudit.Claim(1.0, sensitivity_norm="linf", sensitivity=1.0)
HIST = AutoPairs(kind="histogram")
UNIT = (0.0, 1.0)


def pairs_as_lists(candidates):
    return [(np.asarray(d).tolist(), np.asarray(dp).tolist()) for d, dp in candidates.pairs]


# ------------------------------------------------------------------ candidates per kind


def test_answers_are_the_statdp_patterns_of_dp_sniper_exactly():
    c = auto_pairs(np.ones(4), LINF, "auto")
    assert c.kind == "answers" and not c.records
    one = [1.0] * 4
    assert pairs_as_lists(c) == [
        (one, [0.0, 1.0, 1.0, 1.0]),  # one below
        (one, [2.0, 1.0, 1.0, 1.0]),  # one above
        (one, [2.0, 0.0, 0.0, 0.0]),  # one above rest below
        (one, [0.0, 2.0, 2.0, 2.0]),  # one below rest above
        (one, [2.0, 2.0, 0.0, 0.0]),  # half half
        (one, [2.0] * 4),  # all above
        (one, [0.0] * 4),  # all below
        ([1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]),  # X shape
    ]


@pytest.mark.parametrize(("norm", "step"), [("l1", 0.25), ("l2", 0.5), ("linf", 1.0)])
def test_answer_patterns_move_by_the_sensitivity_in_the_claims_norm(norm, step):
    claim = dpaudit.Claim(1.0, sensitivity_norm=norm, sensitivity=2.0)
    c = auto_pairs(np.zeros(4), claim, AutoPairs(kind="answers"))
    order = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    for d, dp in c.pairs:
        assert np.linalg.norm(dp - d, ord=order) == pytest.approx(2.0)
    assert np.asarray(c.pairs[c.names.index("all above")][1]).tolist() == [2 * step] * 4


def test_one_answer_has_two_candidates_and_no_repeats():
    c = auto_pairs(np.array([1.0]), LINF, "auto")
    assert c.names == ("one below", "one above")
    assert pairs_as_lists(c) == [([1.0], [0.0]), ([1.0], [2.0])]


def test_histogram_add_remove_adds_to_and_removes_from_each_bin():
    c = auto_pairs(np.array([3, 0]), dpaudit.Claim(1.0, adjacency="add-remove"), HIST)
    assert c.kind == "histogram"
    assert c.names == ("remove from bin 0", "add to bin 0", "add to bin 1")
    assert pairs_as_lists(c) == [([3, 0], [2, 0]), ([3, 0], [4, 0]), ([3, 0], [3, 1])]


def test_histogram_replace_one_moves_one_count_between_bins():
    c = auto_pairs(np.array([1, 0, 2]), dpaudit.Claim(1.0), HIST)
    assert pairs_as_lists(c) == [
        ([1, 0, 2], [0, 1, 2]),
        ([1, 0, 2], [0, 0, 3]),
        ([1, 0, 2], [2, 0, 1]),
        ([1, 0, 2], [1, 1, 1]),
    ]


def test_large_histograms_use_representative_bins():
    counts = np.array([5, 4, 9, 0, 3, 3, 3, 2])
    c = auto_pairs(counts, dpaudit.Claim(1.0, adjacency="add-remove"), HIST)
    # first, second, last, smallest (bin 3) and largest (bin 2) count
    assert c.names == (
        "remove from bin 0", "add to bin 0", "remove from bin 1", "add to bin 1",
        "remove from bin 7", "add to bin 7", "add to bin 3", "remove from bin 2", "add to bin 2",
    )  # fmt: skip


def test_scalar_records_go_to_the_ends_of_the_domain():
    data = np.array([0.2, 0.5])
    c = auto_pairs(data, dpaudit.Claim(1.0), AutoPairs(domain=UNIT))
    assert c.kind == "records" and c.records
    assert pairs_as_lists(c) == [
        ([0.2, 0.5], [0.0, 0.5]),
        ([0.2, 0.5], [1.0, 0.5]),
        ([0.0, 0.5], [1.0, 0.5]),
    ]
    c = auto_pairs(data, dpaudit.Claim(1.0, adjacency="add-remove"), AutoPairs(domain=UNIT))
    assert c.names == ("remove record 0", "add low", "add high")
    assert pairs_as_lists(c) == [
        ([0.2, 0.5], [0.5]),
        ([0.2, 0.5], [0.0, 0.2, 0.5]),
        ([0.2, 0.5], [1.0, 0.2, 0.5]),
    ]


def test_vector_records_get_the_corner_patterns_and_opposite_corners():
    data = np.full((2, 4), 0.5)
    c = auto_pairs(data, dpaudit.Claim(1.0), AutoPairs(domain=(-1.0, 1.0), index=1))
    assert c.names == (
        "record 1 := low", "record 1 := high", "record 1 := first high rest low",
        "record 1 := first low rest high", "record 1 := half high half low",
        "record 1 := half low half high", "record 1: low vs high",
        "record 1: first high rest low vs first low rest high",
        "record 1: half high half low vs half low half high",
    )  # fmt: skip
    d, dp = c.pairs[c.names.index("record 1: half high half low vs half low half high")]
    assert np.asarray(d).tolist() == [[0.5] * 4, [1.0, 1.0, -1.0, -1.0]]
    assert np.asarray(dp).tolist() == [[0.5] * 4, [-1.0, -1.0, 1.0, 1.0]]


def test_auto_pairs_options_compare_and_hash_like_values():
    a, b = AutoPairs(domain=([0, 0], [1, 2])), AutoPairs(domain=((0.0, 0.0), (1.0, 2.0)))
    assert a == b and hash(a) == hash(b) and a.domain == ((0.0, 0.0), (1.0, 2.0))
    assert AutoPairs(labels=np.array([0, 1])).labels == (0, 1)


def test_a_record_already_at_the_extreme_gives_no_empty_pair():
    c = auto_pairs(np.array([1.0]), dpaudit.Claim(1.0), AutoPairs(domain=UNIT))
    assert c.names == ("record 0 := low", "record 0: low vs high")


def test_labelled_records_try_every_label_at_every_corner():
    x, y = np.array([[0.5, 0.5], [0.1, 0.9]]), np.array([0, 1])
    c = auto_pairs((x, y), dpaudit.Claim(1.0), AutoPairs(domain=UNIT))
    assert c.kind == "labelled"
    assert c.names[:4] == (
        "record 0 := low, label 0", "record 0 := low, label 1",
        "record 0 := high, label 0", "record 0 := high, label 1",
    )  # fmt: skip
    (d_x, d_y), (dp_x, dp_y) = c.pairs[c.names.index("record 0: low, label 0 vs high, label 1")]
    assert d_x.tolist() == [[0.0, 0.0], [0.1, 0.9]] and d_y.tolist() == [0, 1]
    assert dp_x.tolist() == [[1.0, 1.0], [0.1, 0.9]] and dp_y.tolist() == [1, 1]
    assert len(c.pairs) == 8 + 8  # 4 corners x 2 labels, then 2 opposite pairs x 4 label pairs


@pytest.mark.parametrize("adjacency", ["replace-one", "add-remove"])
def test_record_candidates_are_neighbours_under_the_claims_adjacency(adjacency):
    claim = dpaudit.Claim(1.0, adjacency=adjacency)
    for data in (np.full((3, 3), 0.3), (np.full((3, 2), 0.3), np.array([0, 1, 1]))):
        for d, dp in auto_pairs(data, claim, AutoPairs(domain=UNIT)).pairs:
            check_adjacent(d, dp, adjacency)


# ------------------------------------------------------------------ bad input, one sentence


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AutoPairs(kind="matrix"), "AutoPairs kind must be one of"),
        (lambda: AutoPairs(domain=(1.0, 0.0)), "lo < hi"),
        (lambda: AutoPairs(domain=(0.0, np.inf)), "must be finite"),
        (lambda: AutoPairs(domain=3.0), "must be a pair"),
        (lambda: auto_pairs(np.ones((3, 2)), LINF, "auto"), "cannot tell what these data are"),
        (lambda: auto_pairs(np.array([1, 0, 2]), LINF, "auto"), "histogram counts or integer"),
        (
            lambda: auto_pairs(np.ones((3, 2)), LINF, AutoPairs(kind="records")),
            "needs the records' domain",
        ),
        (lambda: auto_pairs(np.array([2.0]), LINF, AutoPairs(domain=UNIT)), "outside the declared"),
        (lambda: auto_pairs(np.ones(3), dpaudit.Claim(1.0), "auto"), "sensitivity_norm"),
        (lambda: auto_pairs(np.ones(3), LINF, "automatic"), "pairs must be 'auto'"),
        (
            lambda: auto_pairs(np.array([1, -1]), LINF, AutoPairs(kind="histogram")),
            "non-negative integer counts",
        ),
        (lambda: auto_pairs(np.ones(3), LINF, AutoPairs(domain=UNIT, index=5)), "out of range"),
    ],
)
def test_bad_input_is_one_sentence(make, message):
    with pytest.raises(ValueError, match=message) as err:
        make()
    text = str(err.value)
    assert text.endswith(".") and "\n" not in text


def test_auto_with_data_prime_is_refused():
    with pytest.raises(ValueError, match="pass data alone"):
        blackbox_audit(noisy_max_value, np.ones(2), np.zeros(2), LINF, pairs="auto")


def test_wrong_type_of_pairs_spec():
    with pytest.raises(TypeError, match="AutoPairs"):
        auto_pairs(np.ones(2), LINF, {"kind": "answers"})


# ------------------------------------------------------------------ detection and validity


def noisy_max_value(answers, n, key):
    """Report-noisy-max that releases the noisy maximum: Laplace noise of scale 2/eps (eps = 1)."""
    rng = numpy_generator(key)
    a = np.asarray(answers, dtype=np.float64)
    return np.max(a + rng.laplace(scale=2.0, size=(n, a.size)), axis=1)


def run(data, data_prime=None, pairs=None, seed=1, samples=20_000):
    return blackbox_audit(
        noisy_max_value, data, data_prime, LINF, pairs=pairs, samples=samples,
        select_samples=5_000, seed=seed, check_adjacency=False, progress=False,
    )  # fmt: skip


def test_auto_pairs_find_the_noisy_max_violation_the_trivial_pair_misses():
    # true epsilon 4 x 1/2 = 2 on "all above" / "all below", at most 1/2 moving one answer
    base = np.ones(4)
    auto = run(base, pairs="auto")
    assert auto.verdict == "violation" and auto.epsilon_lower > 1.2
    assert "the certified pair is 'all" in auto.notes[-1]
    assert any("8 candidate pairs (one below, one above" in n for n in auto.notes)
    trivial = run(base, np.array([0.0, 1.0, 1.0, 1.0]))
    assert trivial.verdict == "inconclusive" and trivial.epsilon_lower < 0.6


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15])
def test_auto_pairs_find_the_noisy_max_violation_over_seeds(seed):
    base = np.ones(4)
    assert run(base, pairs="auto", seed=seed).verdict == "violation"
    assert run(base, np.array([0.0, 1.0, 1.0, 1.0]), seed=seed).verdict == "inconclusive"


RR_KEEP = np.e / (1 + np.e)  # randomized response at epsilon = 1


def threshold_rr(counts, n, key):
    """A correct, tight 1-DP histogram release: randomized response on [count of bin 0 >= 3].

    Moving one count out of bin 0 flips the bit's truth when bin 0 holds 3: the bit's law
    changes from (1 - RR_KEEP, RR_KEEP) to the reverse, a privacy loss of exactly 1 on a
    large event; any other move leaves the law unchanged.
    """
    rng = numpy_generator(key)
    truth = float(np.asarray(counts)[0] >= 3)
    keep = rng.random(n) < RR_KEEP
    return np.where(keep, truth, 1.0 - truth)


SIX_BINS = np.array([3, 2, 4, 1, 2, 5])  # replace-one: 6 x 5 = 30 candidate moves


def rr_bounds(counts, seeds, samples):
    out = []
    for seed in seeds:
        res = blackbox_audit(
            threshold_rr, counts, claim=dpaudit.Claim(1.0), pairs=HIST, samples=samples,
            select_samples=samples, seed=seed, progress=False,
        )  # fmt: skip
        assert res.event.selection.pairs == counts.size * (counts.size - 1)
        out.append(res.epsilon_lower)
    return np.asarray(out)


def exact_bound_law(n: int, confidence: float = 0.95):
    """Mean and exceedance probability of the certified bound on the tight event, exactly.

    Whichever tight pair and direction selection picks, the claim is pure, so the event's
    counts on fresh Poissonised releases are Poisson(n RR_KEEP) under P and
    Poisson(n (1 - RR_KEEP)) under Q: their sum S is Poisson(n) and k_P | S is
    Bin(S, RR_KEEP); the bound is the conditional ratio bound. Enumerate them.
    """
    from dpaudit.estimation.bounds import CONDITIONAL_RATIO, certified_epsilon_by

    s = np.arange(int(n - 9 * np.sqrt(n)), int(n + 9 * np.sqrt(n)) + 1)
    k = np.arange(s[-1] + 1)
    kk, ss = np.meshgrid(k, s)
    valid = kk <= ss
    bound = certified_epsilon_by(
        CONDITIONAL_RATIO, np.where(valid, kk, 0), 0, np.where(valid, ss - kk, 0), 0,
        confidence=confidence,
    )  # fmt: skip
    weight = scipy.stats.poisson.pmf(s, n)[:, None] * scipy.stats.binom.pmf(kk, ss, RR_KEEP)
    weight = weight * valid
    return float(np.sum(weight * bound)), float(np.sum(weight * (bound > 1.0)))


def test_auto_candidates_keep_a_tight_mechanism_below_its_truth():
    # one audit, six candidate moves (the calibration over seeds is the slow test below)
    (bound,) = rr_bounds(np.array([3, 1, 2]), [0], samples=2_000)
    assert 0.7 < bound <= 1.0


@pytest.mark.slow
def test_thirty_auto_candidates_hold_the_confidence_level_over_seeds():
    # 40 seeds of 30 candidates: the certified bound keeps the law of one fixed tight event
    # on fresh releases (exact, the conditional ratio bound: mean 0.9167, exceedance 4.7 %
    # at 2000 releases). Certifying on the selection releases instead (the best of ten
    # equivalent tight events) moves the mean up by several standard errors, and so does a
    # level error.
    n = 2_000
    mean, exceed_rate = exact_bound_law(n)
    assert exceed_rate <= 0.05  # the RR oracle of test_blackbox_calibration.py
    bounds = rr_bounds(SIX_BINS, range(100, 140), samples=n)
    assert int(np.sum(bounds > 1.0)) <= scipy.stats.binom.ppf(0.999, bounds.size, exceed_rate)
    se = np.std(bounds, ddof=1) / np.sqrt(bounds.size)
    assert abs(np.mean(bounds) - mean) < 3 * se, (np.mean(bounds), mean, se)


# ------------------------------------------------------------------ specs and the command line


@pytest.fixture
def spec_folder(tmp_path):
    folder = tmp_path / "audits"
    folder.mkdir()
    (folder / "sampler.py").write_text(SAMPLER)
    return folder


def auto_spec(folder, pairs_line, scale=0.5):
    text = SPEC.format(expected="", scale=scale).replace(
        'method = "logistic"', f'method = "logistic"\n{pairs_line}'
    )
    return write_spec(folder, text)


def test_spec_pairs_field_loads_auto_and_a_table(spec_folder):
    assert load_spec(auto_spec(spec_folder, 'pairs = "auto"')).blackbox.pairs == {}
    spec = load_spec(auto_spec(spec_folder, 'pairs = { kind = "records", domain = [0.0, 1.0] }'))
    assert spec.blackbox.pairs == {"kind": "records", "domain": (0.0, 1.0)}
    assert load_spec(auto_spec(spec_folder, "")).blackbox.pairs is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('pairs = "all"', "blackbox.pairs: must be 'auto' or a table"),
        ('pairs = { kind = "matrix" }', "blackbox.pairs: AutoPairs kind must be one of"),
        ("pairs = { domain = [1.0, 0.0] }", "blackbox.pairs: domain must be (lo, hi) with lo < hi"),
        ("pairs = { colour = 1 }", "blackbox.pairs.colour: unknown key"),
    ],
)
def test_bad_spec_pairs_name_the_field(spec_folder, line, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        load_spec(auto_spec(spec_folder, line))


def test_a_spec_with_auto_pairs_runs_and_reports_the_kind(spec_folder, tmp_path):
    # Laplace mean at half the scale (true epsilon 2 > 1) over records in [0, 1]^2
    path = auto_spec(spec_folder, "pairs = { domain = [0.0, 1.0] }")
    out = tmp_path / "r.json"
    assert main(["run", str(path), "--json", str(out)]) == 1  # violation, none expected
    (record,) = json.loads(out.read_text())["audits"]
    assert record["verdict"] == "violation"
    assert any("records in the declared domain" in n for n in record["notes"])


def test_the_command_line_takes_pairs_and_domain(spec_folder, tmp_path, capsys):
    d = np.full((20, 1), 0.5)
    np.save(tmp_path / "d.npy", d)
    target = f"{spec_folder / 'sampler.py'}:laplace_mean"
    data = ["--data", str(tmp_path / "d.npy"), str(tmp_path / "d.npy"), "--samples", "20000"]
    common = ["check", target, "--blackbox", "--epsilon", "0.5", *data]
    assert main([*common, "--pairs", "records", "--domain", "0", "1"]) == 1  # true eps 1 > 0.5
    assert main([*common, "--pairs", "records"]) == 2
    assert "needs the records' domain" in capsys.readouterr().err
    assert main([*common, "--domain", "0", "1"]) == 2
    assert "--domain is for --pairs" in capsys.readouterr().err
