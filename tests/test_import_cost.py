"""Loading the audit engine loads what an audit needs and nothing it only sometimes needs.

The engine is what ``dpaudit audit`` imports before its first audit (the white-box and
black-box engines, the spec reader, the command). The statistics stacks, the training
engine, the testing tier, the adapters and the figures are imported where they are used.
Checked in a fresh process by ``sys.modules`` (a count, not a time).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = (
    "import dpaudit.whitebox.engine, dpaudit.blackbox.engine, dpaudit.io.spec, dpaudit.cli.main"
)
#: Imported on use only: none is needed to load the engine.
ON_USE = (
    "arviz",
    "scipy.stats",
    "scipy.optimize",
    "matplotlib",
    "dpaudit.training",
    "dpaudit.io.spec.training",
    "dpaudit.testing",
    "dpaudit.adapters",
    "dpaudit.io.plot",
)


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_loading_the_engine_leaves_the_occasional_modules_unloaded():
    loaded = _loaded(ENGINE)
    found = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in ON_USE)]
    assert found == [], found


def test_a_training_name_of_the_spec_reader_loads_the_training_engine_on_use():
    loaded = _loaded("from dpaudit.io.spec import resolve_training")
    assert "dpaudit.training" in loaded and "dpaudit.io.spec.training" in loaded


#: Not needed to load the catalogue and the training engine either (what ``dpaudit validate``
#: of a catalogue spec loads): scipy.stats cost 0.5 s CPU of every catalogue load.
CATALOGUE_ON_USE = ("arviz", "scipy.stats", "matplotlib", "sklearn", "torch", "opendp",
                    "diffprivlib", "pandas", "dpaudit.testing", "dpaudit.adapters",
                    "dpaudit.io.plot")  # fmt: skip
#: Loaded by the builders that call them, not by loading the catalogue (0.19 s CPU, 0.3 x
#: ``import jax``, in session 13).
CATALOGUE_LOAD_ON_USE = ("scipy.optimize", "scipy.integrate")


def test_loading_the_catalogue_and_the_training_engine_leaves_the_statistics_stacks_unloaded():
    loaded = _loaded(f"{ENGINE}, mechanisms, dpaudit.training")
    on_use = CATALOGUE_ON_USE + CATALOGUE_LOAD_ON_USE
    found = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in on_use)]
    assert "mechanisms.iclp.simulations" in loaded and "dpaudit.training.rank" in loaded
    assert found == [], found


@pytest.mark.parametrize("spec", ["iclp-qr-kde", "dpsgd-logistic-rdp"])
def test_validating_a_catalogue_spec_leaves_the_statistics_stacks_unloaded(spec):
    """``dpaudit validate`` of one catalogue spec, in a fresh process (no compilation cache).

    The DP-SGD spec reads scikit-learn's breast-cancer records without importing it.
    """
    code = (
        "import os; os.environ['DPAUDIT_CACHE'] = '0'\n"
        "from dpaudit.cli.main import main\n"
        f"assert main(['validate', 'audits/catalogue/{spec}.toml']) == 0"
    )
    loaded = _loaded(code)
    found = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in CATALOGUE_ON_USE)]
    assert "mechanisms.iclp.simulations" in loaded
    assert found == [], found


def test_importing_dpaudit_loads_no_numerical_stack():
    """``import dpaudit`` is the package's lazy top level: no JAX, numpy, scipy or submodule."""
    loaded = _loaded("import dpaudit")
    heavy = ("jax", "jaxlib", "numpy", "scipy", "numpyro", "mechanisms")
    found = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in heavy)]
    assert found == [] and [m for m in loaded if m.startswith("dpaudit")] == ["dpaudit"], found
