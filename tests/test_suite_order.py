"""The default suite's order: conftest.HEAVY_FILES names existing test files, once each, and
`make test` keeps that order on its xdist workers (a stale name would silently fall back to
collection order, and xdist's reorder would put the heavy files with few tests last)."""

from pathlib import Path

from conftest import HEAVY_FILES

ROOT = Path(__file__).resolve().parents[1]


def test_heavy_files_exist_once_each():
    assert len(set(HEAVY_FILES)) == len(HEAVY_FILES)
    assert [name for name in HEAVY_FILES if not (ROOT / name).is_file()] == []


def test_make_test_keeps_the_collection_order():
    makefile = (ROOT / "Makefile").read_text()
    assert "--dist loadfile --no-loadscope-reorder" in makefile
