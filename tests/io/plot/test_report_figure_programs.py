"""The report's "releases" figure draws by one compiled program per audit: op by op, the model
compiled a program per numpyro operation and shape for each audit of a suite (most of
``make audit``'s report time). A release that is one number, or that is not the summary's
coordinates, draws nothing: no program at all."""

from pathlib import Path

import jax
import pytest

from compile_counts import count_compilations
from dpaudit.io import plot
from dpaudit.io.plot.svg import SvgAxes
from dpaudit.io.spec import load_pair, load_spec, resolve_mechanism

AUDITS = Path(__file__).resolve().parents[3] / "audits" / "catalogue"


def _figure(name: str):
    spec = load_spec(AUDITS / f"{name}.toml")
    mechanism = resolve_mechanism(spec)
    data = load_pair(spec, mechanism)[0]
    jax.clear_caches()  # what another test compiled is not reused
    with count_compilations() as count:
        ax = plot.releases(mechanism, data, ax=SvgAxes())
    return ax, count[0]


def test_releases_figure_is_one_program():
    ax, programs = _figure("laplace-mean")
    page = ax.svg("releases")
    assert "non-private summary f_D" in page and ">releases<" in page  # the legend's two lines
    assert programs == 1


@pytest.mark.parametrize("name", ["gaussian-mean-gdp", "report-noisy-max-laplace"])
def test_nothing_to_draw_runs_no_program(name):
    ax, programs = _figure(name)
    assert ax is None and programs == 0
