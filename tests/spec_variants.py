"""Shipped specs rewritten for a test: the same mechanism built, and claimed, at another epsilon."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spec_at(tmp_path: Path, folder: str, name: str, epsilon: float) -> Path:
    """The shipped spec ``audits/<folder>/<name>.toml`` with the mechanism built, and claimed,
    at ``epsilon``, written into ``tmp_path``."""
    text = (ROOT / "audits" / folder / f"{name}.toml").read_text()
    text, built = re.subn(
        r'(\[mechanism\]\nname = "[^"]+")', rf"\1\nparams = {{ epsilon = {epsilon} }}", text
    )
    text, claimed = re.subn(r"(\[claim\]\nepsilon = )[0-9.e-]+", rf"\g<1>{epsilon}", text)
    assert built == claimed == 1, f"{name}: unexpected spec layout"
    path = tmp_path / f"{name}-{epsilon}.toml"
    path.write_text(text)
    return path
