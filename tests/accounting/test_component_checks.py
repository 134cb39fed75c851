"""Issue 34: accounting components with infinite or NaN parameters are refused at once.

``compose_accounting([GaussianComponent(inf)])`` never returned; now every component
refuses a NaN, infinite or negative parameter with one sentence when it is built.
"""

import math
import re

import pytest

from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceComponent,
    SupremumComponent,
    compose_accounting,
)
from dpaudit.accounting.subsampling import SubsampledComponent

BAD = [math.inf, -math.inf, math.nan, -1.0]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(
    ("component", "name"),
    [
        (GaussianComponent, "GaussianComponent.mu"),
        (LaplaceComponent, "LaplaceComponent.a"),
        (SupremumComponent, "SupremumComponent.epsilon"),
    ],
)
def test_a_component_refuses_a_bad_parameter(component, name, value):
    with pytest.raises(ValueError, match=re.escape(name)) as err:
        compose_accounting([component(value)])
    assert len(str(err.value).splitlines()) == 1


def test_a_component_refuses_a_parameter_that_is_no_number():
    with pytest.raises(TypeError, match=r"GaussianComponent\.mu must be a number"):
        GaussianComponent("1.0")


@pytest.mark.parametrize("q", [math.nan, math.inf, 0.0, 1.5])
def test_a_subsampled_component_refuses_a_bad_probability(q):
    with pytest.raises(ValueError, match=r"SubsampledComponent\.q"):
        SubsampledComponent(GaussianComponent(1.0), q)


def test_a_subsampled_component_refuses_a_bad_base_or_scheme():
    with pytest.raises(TypeError, match=r"SubsampledComponent\.base"):
        SubsampledComponent(SupremumComponent(1.0), 0.5)
    with pytest.raises(ValueError, match=r"SubsampledComponent\.scheme"):
        SubsampledComponent(GaussianComponent(1.0), 0.5, "sometimes")


def test_good_components_still_compose():
    acc = compose_accounting([GaussianComponent(0.0), GaussianComponent(1.0)])
    assert acc.family == "gaussian" and acc.mu == 1.0
