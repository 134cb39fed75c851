"""dpaudit.io.plot draws every figure of a result, says in words what it cannot draw, and the
results print short: __repr__, summary(), _repr_html_."""

import dataclasses

import numpy as np
import pytest

import dpaudit
from dpaudit.io import plot
from dpaudit.io.datasets import generate


@pytest.fixture(scope="module", autouse=True)
def _agg():
    """matplotlib's Agg backend, imported when this file's tests run (not at collection: every
    xdist worker collects every file)."""
    import matplotlib

    matplotlib.use("Agg")


@pytest.fixture(scope="module")
def results():
    # one functional audit (about 15 s, mostly compilation): a pure claim, a certified
    # violation, a compatibility check and curves to draw
    name = "faulty/iclp-unscaled-sigma"
    mech = dpaudit.build(name)
    d, d2 = generate("example", mech, seed=0)
    return {name: (mech, d, dpaudit.audit(mech, d, d2, samples=2000, seed=0, progress=False))}


def _texts(ax):
    return " ".join(t.get_text() for t in ax.texts)


def test_profile_draws_a_pure_claim_as_a_vertical_line(results):
    _, _, result = results["faulty/iclp-unscaled-sigma"]
    ax = plot.privacy_profile(result)
    claim = result.claim
    assert claim.delta == 0
    verticals = [  # a line from the bottom to the top of the axes at one epsilon (not a point)
        line
        for line in ax.get_lines()
        if len(line.get_xdata()) == 2
        and np.ptp(line.get_xdata()) == 0
        and list(line.get_ydata()) == [0, 1]
    ]
    assert [float(line.get_xdata()[0]) for line in verticals] == [claim.epsilon]
    assert ax.get_yscale() == "log" and len(ax.get_legend().get_texts()) <= 4
    assert ax.collections  # the confidence bands are filled areas, not dotted lines


def test_profile_says_in_words_when_epsilon_is_infinite(results):
    _, _, result = results["faulty/iclp-unscaled-sigma"]
    summary = dict(result.epsilon_at_claimed_delta, estimate=float("inf"))
    infinite = dataclasses.replace(result, epsilon_at_claimed_delta=summary)
    assert "is infinite" in _texts(plot.privacy_profile(infinite))
    assert "is infinite" not in _texts(plot.privacy_profile(result))


def test_loss_histogram_and_releases(results):
    mech, d, result = results["faulty/iclp-unscaled-sigma"]
    ax = plot.loss_distribution(result)
    assert any(np.ptp(line.get_xdata()) == 0 for line in ax.get_lines())  # ± claimed epsilon
    assert plot.releases(mech, d).get_lines()
    # what a suite worker sends back instead of the mechanism draws the very same lines
    import pickle

    from dpaudit.io.plot.whitebox import sketch_releases

    sketch = pickle.loads(pickle.dumps(sketch_releases(mech, d)))
    assert sketch.known_flaw == mech.known_flaw and sketch.known_flaw is not None
    direct, sketched = plot.releases(mech, d).get_lines(), plot.releases(sketch, d).get_lines()
    assert len(direct) == len(sketched) == 4  # three releases and the summary
    for a, b in zip(direct, sketched, strict=True):
        assert np.array_equal(a.get_xydata(), b.get_xydata())
    comp = plot.compatibility_sums(result)
    assert comp is not None and comp.get_xscale() == "linear"  # a handful of components


def test_result_repr_and_summary_are_short(results):
    _, _, result = results["faulty/iclp-unscaled-sigma"]
    text = repr(result)
    assert len(text) < 200 and text.startswith("AuditResult(") and "violation" in text
    summary = result.summary()
    lines = summary.splitlines()
    assert 3 <= len(lines) <= 6 and lines[0].endswith(": violation")
    assert lines[1].startswith("  why: ")  # the decisive reason leads
    assert lines[2].startswith("  claim: (1, 0)-DP") and "certified: epsilon(0) >= " in lines[3]
    assert lines[-1].startswith("  pair: summary difference ")  # the pair the verdict holds on
    assert "<table>" in result._repr_html_() and "violation" in result._repr_html_()


def test_blackbox_result_repr_and_summary():
    def sampler(data, n, key):
        return np.asarray(data, float).mean() + np.random.default_rng(0).laplace(0, 0.05, n)

    d, d2 = np.zeros((20, 1)), np.zeros((20, 1))
    d2[0] = 1.0
    result = dpaudit.blackbox_audit(sampler, d, d2, dpaudit.Claim(epsilon=1.0), samples=4000,
                                    seed=0, progress=False)  # fmt: skip
    assert len(repr(result)) < 200 and repr(result).startswith("BlackBoxResult(")
    lines = result.summary().splitlines()
    event_line = 4 if result.verdict == "violation" else 3  # a violation's reason leads
    assert "black-box" in lines[0] and lines[event_line].startswith("  event: ")
    assert plot.certification_scores(result) is not None


def test_report_figures_are_inline_svg_with_no_matplotlib_figure(results, tmp_path, monkeypatch):
    """The report draws its figures as inline SVG: no matplotlib figure (the former report
    made one per plot, each laid out twice), a bounded size per audit, each figure once."""
    import matplotlib.figure

    from dpaudit.io.report import AuditOutcome, write_report

    created, original = [], matplotlib.figure.Figure.__init__

    def counting(self, *args, **kwargs):
        created.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "__init__", counting)
    ((name, (mech, d, result)),) = results.items()
    d2 = generate("example", mech, seed=0)[1]
    outcomes = [AuditOutcome(f"{name}-{i}", result, mechanism=mech, data=(d, d2)) for i in range(3)]
    page = write_report(outcomes, tmp_path / "r").read_text(encoding="utf-8")
    assert created == []
    assert "data:image" not in page
    # loss distribution, privacy profile, compatibility sums, releases: four per audit
    assert page.count("<svg xmlns=") == 3 * 4
    assert len(page.encode()) < 3 * 30_000  # 19.6 kB per audit when written
