"""The HTML report renders in a real headless browser (Debian's chromium), when one is installed.

Install it with ``apt-get install chromium``; without it the test is skipped with that reason.
"""

import shutil
import subprocess

import numpy as np
import pytest
from spec_fixtures import BLACK_BOX_SPEC as BLACKBOX_SPEC
from spec_fixtures import SAMPLER
from test_cli import SPEC, USER

from dpaudit.cli.main import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# the report's colours (dpaudit/io/report.py): expected finding, banners, unexpected verdict
SLATE, RED = (0x4A / 255, 0x5A / 255, 0x8C / 255), (0xB0 / 255, 0.0, 0x20 / 255)
BANNER_OK, BANNER_BAD = (0xE3 / 255, 0xF4 / 255, 0xE8 / 255), (0xFB / 255, 0xE4 / 255, 0xE8 / 255)


def _near(pixels, colour, tol=0.03):
    return (np.abs(pixels - np.array(colour)) < tol).all(axis=-1)


def _screenshot(page, shot):
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,1600", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    import matplotlib.image

    return matplotlib.image.imread(shot)[..., :3]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    assert main(["run", str(tmp_path / "faulty.toml"), "--report", str(tmp_path / "r")]) == 0
    pixels = _screenshot(tmp_path / "r" / "index.html", tmp_path / "shot.png")
    # A blank or failed page is one colour; the report has text, badges, a banner and plots.
    assert pixels.std() > 0.05
    assert _near(pixels, SLATE).sum() > 200  # the expected "violation" badge: not alarming red
    assert _near(pixels, BANNER_OK).sum() > 5000  # the green banner: all as expected
    assert _near(pixels, BANNER_BAD).sum() < 1000  # (anti-aliased plot lines come near it)
    assert np.unique(pixels.reshape(-1, 3).round(2), axis=0).shape[0] > 50
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "pass"', scale=0.5))
    assert main(["audit", str(tmp_path / "faulty.toml"), "--report", str(tmp_path / "r")]) == 1
    page = tmp_path / "r" / "index.html"
    assert "0 as expected, 1 unexpected (1 false alarm)" in page.read_text()
    pixels = _screenshot(page, tmp_path / "shot2.png")
    assert _near(pixels, BANNER_BAD).sum() > 5000 and _near(pixels, RED).sum() > 200


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
def test_black_box_report_renders_its_histogram(tmp_path):
    (tmp_path / "sampler.py").write_text(SAMPLER)
    spec = BLACKBOX_SPEC.format(expected='expected = "violation"', scale=0.5)
    (tmp_path / "broken.toml").write_text(spec)
    assert main(["run", str(tmp_path / "broken.toml"), "--report", str(tmp_path / "r")]) == 0
    page = tmp_path / "r" / "index.html"
    assert "Certified event" not in page.read_text()  # the title is drawn inside the PNG
    pixels = _screenshot(page, tmp_path / "shot.png")
    assert _near(pixels, SLATE).sum() > 200  # the expected "violation" badges
    # matplotlib's C0 blue and C1 orange: the histograms of the statistic under P and Q
    blue = (np.abs(pixels - np.array([0.12, 0.47, 0.71])) < 0.08).all(axis=-1)
    orange = (np.abs(pixels - np.array([1.0, 0.5, 0.05])) < 0.08).all(axis=-1)
    assert (
        blue.sum() > 50 and orange.sum() > 50
    )  # both histograms drawn (sizes vary with the statistic)
