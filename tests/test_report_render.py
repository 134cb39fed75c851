"""The HTML report renders in a real headless browser (Debian's chromium), when one is installed.

Install it with ``apt-get install chromium``; without it the test is skipped with that reason.
"""

import shutil
import subprocess

import numpy as np
import pytest
from test_cli import SPEC, USER

from dpaudit.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    assert main(["run", str(tmp_path / "faulty.toml"), "--report", str(tmp_path / "r")]) == 0
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,1600", (tmp_path / "r" / "index.html").as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    # A blank or failed page is one colour; the report has text, a red badge and plots.
    assert pixels.std() > 0.05
    red = (pixels[..., 0] > 0.6) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.25)
    assert red.sum() > 200  # the "violation" badge
    assert np.unique(pixels.reshape(-1, 3).round(2), axis=0).shape[0] > 50
