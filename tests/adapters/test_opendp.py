"""dpaudit.adapters.from_opendp: claims, adjacency and datasets read off OpenDP measurements.

Skipped without OpenDP (the ``libraries`` extra). The fast tests pin the translation of
each measure, metric and domain, the batched sampler, the bad inputs (one sentence each)
and that the shipped specs (audits/libraries/opendp-*.toml) still hold the adapter's own
translation; the slow test runs the ten shipped audits and checks every verdict.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from dpaudit.adapters import from_opendp
from dpaudit.blackbox import AutoPairs
from dpaudit.io.spec import load_spec
from dpaudit.model.claims import Claim, ZCDPClaim

dp = pytest.importorskip("opendp.prelude", reason="the 'libraries' extra is not installed")
dp.enable_features("contrib")

_ROOT = Path(__file__).resolve().parents[2] / "audits" / "libraries"


def _module():
    spec = importlib.util.spec_from_file_location("opendp_audits", _ROOT / "opendp_audits.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("opendp_audits", module)
    spec.loader.exec_module(module)
    return module


LIB = _module()


def _laplace(scale=1.0):
    return dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def _gaussian(scale=1.0):
    return dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )


def test_each_output_measure_becomes_its_claim():
    assert from_opendp(_laplace(2.0), d_in=1.0).claim.epsilon == pytest.approx(0.5)
    zcdp = from_opendp(_gaussian(1.0), d_in=1.0).claim
    assert isinstance(zcdp, ZCDPClaim) and zcdp.rho == pytest.approx(0.5)
    smoothed = dp.c.make_zCDP_to_approxDP(_gaussian(1.0))
    claim = from_opendp(smoothed, d_in=1.0, delta=1e-6).claim
    assert claim.delta == 1e-6 and claim.epsilon == pytest.approx(smoothed.map(1.0).epsilon(1e-6))
    fixed = dp.c.make_fix_delta(smoothed, 1e-6)
    assert from_opendp(fixed, d_in=1.0).claim.epsilon == pytest.approx(fixed.map(1.0)[0])
    three = dp.c.make_composition([_laplace(1.0)] * 3)
    assert from_opendp(three, d_in=1.0).claim.epsilon == pytest.approx(3.0)


def test_input_metrics_set_adjacency_and_sensitivity():
    hist = LIB.histogram()
    assert from_opendp(hist, 1, domain=(0, 3)).claim.adjacency == "add-remove"
    two = from_opendp(hist, 2, domain=(0, 3)).claim
    assert two.adjacency == "replace-one" and two.epsilon == pytest.approx(2.0)
    sized = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=5)
    mean = dp.t.make_mean(sized, dp.symmetric_distance()) >> dp.m.then_laplace(1.0)
    changed = from_opendp(mean, 2)  # a replacement: one record out, one in
    assert changed.claim.adjacency == "replace-one"
    assert changed.pairs == AutoPairs(kind="records", domain=(0.0, 1.0))  # the domain's bounds
    assert changed.data.shape == (5,)  # the domain's size
    scalar = from_opendp(_laplace(), d_in=2.0).claim
    assert (scalar.sensitivity_norm, scalar.sensitivity) == ("l1", 2.0)
    vector = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3), dp.l2_distance(T=float), 1.0
    )
    v = from_opendp(vector, d_in=1.0)
    assert (v.claim.sensitivity_norm, v.pairs.kind, v.data.shape) == ("l2", "answers", (3,))


def test_a_scalar_answer_is_paired_with_the_answer_d_in_away():
    pairs = from_opendp(_laplace(), d_in=2.0).pairs
    assert len(pairs) == 1 and float(pairs[0][1][0] - pairs[0][0][0]) == 2.0
    bounded = dp.m.make_laplace(dp.atom_domain(bounds=(0, 1)), dp.absolute_distance(T=int), 1.0)
    ((d, d1),) = from_opendp(bounded, d_in=1).pairs
    assert 0 <= d[0] <= 1 and 0 <= d1[0] <= 1  # inside the bounds of the input domain


def test_the_sampler_draws_batches_through_one_composition():
    target = from_opendp(LIB.histogram(), 1, domain=(0, 3), batch=7)
    releases = target.sampler(target.data, 20, jax.random.key(0))
    assert releases.shape == (20, 5)  # four categories and OpenDP's unknown bin
    assert len(np.unique(releases[:, 0])) > 1  # independent draws, not one repeated
    assert any("7 releases per OpenDP call" in n for n in target.notes)
    assert not target.reproducible and any("cannot be seeded" in n for n in target.notes)
    one = from_opendp(_laplace(), d_in=1.0, batch=1)
    assert one.sampler(np.array([0.0]), 3, None).shape == (3,)
    assert any("one OpenDP call per release" in n for n in one.notes)


def test_a_stated_claim_replaces_the_map_and_says_so():
    stated = Claim(epsilon=0.5, delta=1e-6)
    target = from_opendp(_gaussian(), d_in=1.0, claim=stated)
    assert target.claim.epsilon == 0.5 and target.claim.sensitivity == 1.0  # metric kept
    assert isinstance(target.library_claim, ZCDPClaim)
    assert any("not OpenDP's own privacy map" in n for n in target.notes)


class _Type:
    def __init__(self, name):
        self.origin, self.args = name, ()


class _Space:
    def __init__(self, name, distance_type="f64"):
        self.type, self.distance_type = _Type(name), distance_type


class _FakeMeasurement:
    """An object with a measurement's interface, its measure or metric unknown to the adapter."""

    def __init__(self, measure="MaxDivergence", metric="AbsoluteDistance"):
        self.input_domain = dp.atom_domain(T=float, nan=False)
        self.input_metric = _Space(metric)
        self.output_measure = _Space(measure)

    def map(self, d_in):
        return 1.0

    def invoke(self, arg):
        return arg


def test_bad_input_gets_one_sentence_each():
    with pytest.raises(ValueError, match=r"output measure RenyiDivergence; supported are Max"):
        from_opendp(_FakeMeasurement(measure="RenyiDivergence"), d_in=1.0)
    with pytest.raises(ValueError, match=r"input metric DiscreteDistance; supported are Symm"):
        from_opendp(_FakeMeasurement(metric="DiscreteDistance"), d_in=1.0)
    with pytest.raises(TypeError, match=r"d_in must be a number .* got str '1'"):
        from_opendp(_laplace(), d_in="1")
    with pytest.raises(TypeError, match=r"d_in must be an integer .*SymmetricDistance.* float"):
        from_opendp(LIB.histogram(), d_in=1.0, domain=(0, 3))
    with pytest.raises(ValueError, match=r"d_in = 3 under SymmetricDistance is a group"):
        from_opendp(LIB.histogram(), d_in=3, domain=(0, 3))
    with pytest.raises(ValueError, match=r"SmoothedMaxDivergence .* pass delta="):
        from_opendp(dp.c.make_zCDP_to_approxDP(_gaussian()), d_in=1.0)
    with pytest.raises(ValueError, match=r"unbounded: pass domain=\(lo, hi\)"):
        from_opendp(LIB.clamp_sum_laplace(), 1)
    transformation = dp.t.make_sum(
        dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False)), dp.symmetric_distance()
    )
    with pytest.raises(TypeError, match=r"needs an OpenDP Measurement, got Transformation"):
        from_opendp(transformation, d_in=1)
    with pytest.raises(TypeError, match=r"claim must be a dpaudit.Claim"):
        from_opendp(_laplace(), d_in=1.0, claim=(1.0, 0.0))


@pytest.mark.parametrize("audit", LIB.AUDITS, ids=lambda a: a.name)
def test_the_shipped_specs_hold_the_adapters_translation(audit):
    """No hand translation: each spec's claim, pair and neighbours are the adapter's."""
    spec = load_spec(_ROOT / f"opendp-{audit.name}.toml")
    target = LIB.auditable(audit)
    stated = spec.claim
    fields = LIB.claim_fields(target.claim)
    if isinstance(stated, Claim):
        assert (stated.epsilon, stated.delta, stated.adjacency) == (
            fields["epsilon"],
            fields["delta"],
            fields["adjacency"],
        )
    else:
        assert (stated.rho, stated.adjacency) == (fields["zcdp_rho"], fields["adjacency"])
    assert (spec.expected, spec.confidence) == (audit.expected, audit.confidence)
    for file, data in zip(spec.files, LIB.spec_datasets(audit), strict=True):
        np.testing.assert_array_equal(np.load(file), data)
    if isinstance(target.pairs, AutoPairs):
        assert AutoPairs(**spec.blackbox.pairs) == target.pairs
    else:
        assert spec.blackbox.pairs is None
    misuse = audit.stated is not None
    assert misuse == (audit.expected == "violation")
    assert (target.claim != target.library_claim) == misuse


@pytest.mark.slow
@pytest.mark.parametrize("audit", LIB.AUDITS, ids=lambda a: a.name)
def test_every_misuse_is_a_violation_and_no_correct_one_is(audit):
    res = LIB.run(audit, seed=11)  # a seed not used to set the budgets
    assert res.verdict == audit.expected, res.notes
    assert res.reproducible is False
    if audit.expected == "inconclusive":
        assert res.epsilon_lower <= res.claim.epsilon or not math.isfinite(res.claim.epsilon)


def _bad_spec(tmp_path, d_in: str) -> Path:
    """A spec whose sampler builds an OpenDP Laplace through the adapter at ``d_in``."""
    (tmp_path / "impl.py").write_text(
        "import opendp.prelude as dp\n"
        "from dpaudit.adapters import from_opendp\n"
        "def sampler(data, n, key, d_in):\n"
        "    dp.enable_features('contrib')\n"
        "    m = dp.m.make_laplace(dp.atom_domain(T=float, nan=False),\n"
        "                          dp.absolute_distance(T=float), 1.0)\n"
        "    return from_opendp(m, d_in=d_in).sampler(data, n, key)\n"
    )
    np.save(tmp_path / "D.npy", np.array([0.0]))
    np.save(tmp_path / "D1.npy", np.array([1.0]))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'expected = "inconclusive"\n[blackbox]\nsampler = "impl.py:sampler"\n'
        f"params = {{ d_in = {d_in} }}\n[claim]\nepsilon = 1.0\n"
        '[data]\nfiles = ["D.npy", "D1.npy"]\n[budget]\nsamples = 1000\n'
    )
    return spec


def test_the_cli_exits_2_on_a_bad_d_in_and_writes_nothing(tmp_path, capsys):
    from dpaudit.cli.main import EXIT_INVALID, main

    report = tmp_path / "out.json"
    code = main(["audit", str(_bad_spec(tmp_path, '"one"')), "--json", str(report)])
    assert code == EXIT_INVALID and not report.exists()
    assert "d_in must be a number" in capsys.readouterr().err


def test_the_spec_sampler_builds_each_measurement_once(monkeypatch):
    # a spec's pre-audit draw and every chunk of its audit call spec_sampler: OpenDP's
    # measurement and its translation are built on the first call only
    built = []
    real = LIB.auditable
    monkeypatch.setattr(LIB, "auditable", lambda audit: built.append(audit.name) or real(audit))
    monkeypatch.setattr(LIB, "_samplers", {})
    data = np.array([0.0])
    for n in (2, 3, 2):
        assert (
            np.asarray(LIB.spec_sampler(data, n, jax.random.key(0), audit="laplace")).shape[0] == n
        )
    assert built == ["laplace"]


def test_building_a_measurement_imports_none_of_the_preludes_extras():
    # opendp.prelude imports scikit-learn, polars and more (seconds): the audits' measurements
    # are built from OpenDP's own modules, the same functions
    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('o', {str(_ROOT / 'opendp_audits.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "module.laplace(); module.histogram()\n"
        "print(sorted(m for m in ('sklearn', 'polars', 'opendp.extras') if m in sys.modules))\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
        env={**os.environ, "PYTHONPATH": root},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
