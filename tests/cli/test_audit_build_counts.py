"""One ``dpaudit audit`` run builds each spec once: what the driver does outside the audits.

Counted per spec in one run over white-box and black-box specs: the spec read once, the
mechanism (or black-box target) built once, one pre-audit draw, and no abstract trace (the
``validate`` path). A driver that built a spec once to validate and again to audit, or
drew before auditing twice, would double these counts.
"""

from collections import Counter
from pathlib import Path

import pytest

import dpaudit.io.spec as spec_module
from dpaudit.cli.main import main

AUDITS = Path(__file__).resolve().parents[2] / "audits"
#: two white-box Gaussian means (0.04 s of audit each) and a black-box Laplace mean
SPECS = ("catalogue/gaussian-mean-classical", "faulty/gaussian-pure-claim", "blackbox/laplace-mean")
COUNTED = (
    "load_spec",
    "resolve_mechanism",
    "resolve_blackbox",
    "check_model_runs",
    "check_model_traces",
    "check_sampler_runs",
    "check_sampler_traces",
)


def test_one_audit_run_builds_and_draws_each_spec_once(tmp_path, monkeypatch):
    calls = Counter()

    def counted(name, real):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    for name in COUNTED:
        monkeypatch.setattr(spec_module, name, counted(name, getattr(spec_module, name)))
    paths = [str(AUDITS / f"{s}.toml") for s in SPECS]
    code = main(
        [
            "audit",
            *paths,
            "-q",
            "--samples",
            "2000",
            "--json",
            str(tmp_path / "r.json"),
            "--no-cache",
        ]
    )
    assert code in (0, 1)
    assert (tmp_path / "r.json").exists()
    assert dict(calls) == {
        "load_spec": 3,
        "resolve_mechanism": 2,  # the black-box spec's reference is built by resolve_blackbox
        "resolve_blackbox": 1,
        "check_model_runs": 2,
        "check_sampler_runs": 1,
    }, dict(calls)


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
