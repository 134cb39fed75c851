"""An optional pytest plugin: hypothesis profiles, a search budget, catalogue parametrisation.

Enable it in your ``conftest.py`` with ``pytest_plugins = ["dpaudit.testing.plugin"]``
(or run ``pytest -p dpaudit.testing.plugin``). It adds:

* ``--dpaudit-profile {ci,long}``: loads the hypothesis profile ``dpaudit-ci``
  (derandomized, 60 examples, no deadline: reproducible CI) or ``dpaudit-long``
  (2000 random examples, for local runs) and picks the search budget. Without
  the option your own hypothesis profile is left alone.
* ``--dpaudit-seed N``: the seed of the ``dpaudit_seed`` fixture (default 0).
* fixture ``search_budget``: :class:`~dpaudit.testing.SearchBudget` —
  ``SearchBudget()`` in ``ci``, ``SearchBudget.long()`` in ``long``.
* fixture ``dpaudit_seed``: an int for searches and audits.
* parametrisation: a test that takes an argument ``catalogue_name`` runs once
  per mechanism in ``dpaudit.catalogue(faulty=False)``, one that takes
  ``faulty_catalogue_name`` once per faulty mechanism (skipped cleanly when
  the catalogue is empty).

Example ``test_catalogue.py``::

    import dpaudit
    from dpaudit.testing import assert_sensitivity_bound, record_space_of

    def test_sensitivity(catalogue_name, search_budget, dpaudit_seed):
        mech = dpaudit.build(catalogue_name)
        assert_sensitivity_bound(mech, record_space=record_space_of(mech),
                                 n=mech.params["n"], budget=search_budget, seed=dpaudit_seed)
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from dpaudit.testing.search import SearchBudget

PROFILES = ("ci", "long")

settings.register_profile(
    "dpaudit-ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dpaudit-long", max_examples=2000, deadline=None)


def pytest_addoption(parser):
    """Register ``--dpaudit-profile`` and ``--dpaudit-seed`` (pytest hook).

    Args:
        parser: pytest's option parser.
    """
    group = parser.getgroup("dpaudit")
    group.addoption(
        "--dpaudit-profile",
        choices=PROFILES,
        default=None,
        help="hypothesis profile and search budget for dpaudit property tests (ci or long).",
    )
    group.addoption(
        "--dpaudit-seed",
        type=int,
        default=0,
        help="seed of the dpaudit_seed fixture (searches and audits).",
    )


_previous_profiles: list[str] = []


def pytest_configure(config):
    """Load the hypothesis profile chosen with ``--dpaudit-profile`` (pytest hook).

    Args:
        config: the pytest config.
    """
    profile = config.getoption("--dpaudit-profile", default=None)
    if profile is not None:
        _previous_profiles.append(settings.get_current_profile_name())
        settings.load_profile(f"dpaudit-{profile}")


def pytest_unconfigure(config):
    # restore the caller's profile (matters when pytest runs in-process, e.g. pytester)
    """Restore the hypothesis profile that was loaded before (pytest hook).

    Args:
        config: the pytest config.
    """
    if config.getoption("--dpaudit-profile", default=None) is not None and _previous_profiles:
        settings.load_profile(_previous_profiles.pop())


def _profile(config) -> str:
    return config.getoption("--dpaudit-profile", default=None) or "ci"


@pytest.fixture
def search_budget(request) -> SearchBudget:
    """The worst-case search budget of the selected profile.

    Args:
        request: the pytest fixture request (reads ``--dpaudit-profile``).

    Returns:
        ``SearchBudget.long()`` under the ``long`` profile, else ``SearchBudget()``.
    """
    return SearchBudget.long() if _profile(request.config) == "long" else SearchBudget()


@pytest.fixture
def dpaudit_seed(request) -> int:
    """The seed given by ``--dpaudit-seed`` (default 0).

    Args:
        request: the pytest fixture request.

    Returns:
        The seed as an int.
    """
    return int(request.config.getoption("--dpaudit-seed", default=0))


def pytest_generate_tests(metafunc):
    """Parametrize ``catalogue_name`` / ``faulty_catalogue_name`` over the catalogue (pytest hook).

    Args:
        metafunc: pytest's test-function metadata.
    """
    import dpaudit

    for argument, faulty in (("catalogue_name", False), ("faulty_catalogue_name", True)):
        if argument in metafunc.fixturenames:
            metafunc.parametrize(argument, dpaudit.catalogue(faulty=faulty))
