"""The placeholder CLI says plainly that audits are not there yet."""

import subprocess
import sys

from dpaudit.cli import main


def test_run_is_not_a_silent_pass(capsys):
    assert main(["run", "audits/"]) == 2
    assert "nothing was audited" in capsys.readouterr().err


def test_info_reports_x64(capsys):
    assert main(["info"]) == 0
    assert "x64 on" in capsys.readouterr().out


def test_console_script_module_entry():
    out = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip()
