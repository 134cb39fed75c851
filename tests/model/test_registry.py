"""The catalogue registry reads the installed entry points once per process."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# in a fresh process (nothing loaded yet): a failing catalogue is tried on every read; once
# the catalogues load, the entry points are not read again
PROBE = """
from dpaudit.model import registry
real = registry.entry_points

class Failing:
    name, value = "broken", "broken"
    def load(self):
        raise ImportError("broken catalogue")

registry.entry_points = lambda **kwargs: [Failing()]
failures = 0
for _ in range(2):
    try:
        registry.catalogue()
    except ImportError:
        failures += 1
reads = []
def counting(**kwargs):
    reads.append(kwargs)
    return real(**kwargs)
registry.entry_points = counting
names = registry.catalogue()
for name in names[:20]:
    assert registry.entry(name).name == name
print("RESULT", failures, len(reads), "laplace-mean" in names)
"""


def test_the_catalogue_entry_points_are_read_once_and_a_failure_is_tried_again():
    """``dpaudit validate audits/`` looked a name up ~190 times; each read of the installed
    packages' entry points cost ~5 ms (counts here, not seconds)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "RESULT 2 1 True", out.stdout
