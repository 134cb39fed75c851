"""Issue 34: Ctrl-C during ``dpaudit audit`` exits 130, with no native crash and no debris.

The command runs in a subprocess (as the ``dpaudit`` program); SIGINT is sent once the model
has run inside the audit (a file it touches), while the Monte Carlo chunks run in XLA.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dpaudit.cli.main import EXIT_INTERRUPTED

ROOT = Path(__file__).resolve().parents[2]

MODEL = """
import pathlib
import jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism

FLAG = pathlib.Path(__file__).with_name("running")

def _mark(value):
    with FLAG.open("a") as f:  # one line per evaluation: traces first, then the chunks
        f.write("x\\n")

def build(n=20):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0))
        jax.debug.callback(_mark, mean)
        numpyro.sample("release", dist.Laplace(mean, 1.0 / n))
    return Mechanism("slow-mean", model,
                     Claim(epsilon=1.0, sensitivity=1 / n, sensitivity_norm="l1"),
                     difference_norm=jnp.abs, params={"n": n})
"""


def _start(tmp_path: Path, *options: str) -> subprocess.Popen:
    (tmp_path / "user.py").write_text(MODEL)
    # a pytest-xdist worker ignores SIGINT, and a child inherits that (Python then installs no
    # KeyboardInterrupt handler): a launcher restores the default action and execs the program,
    # as a shell does (no fork from this JAX process)
    launch = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    launch += "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    command = [sys.executable, "-c", launch]
    command += ["-m", "dpaudit.cli.main", "audit", "user.py:build"]
    command += ["--generator", "points", "--data-param", "n=20", "--cache-dir", "none"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "DPAUDIT_CACHE": "0"}
    env.pop("DPAUDIT_CACHE_DIR", None)
    return subprocess.Popen(
        [*command, *options], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(path: Path, process: subprocess.Popen, marks: int = 1) -> None:
    while not path.exists() or len(path.read_text().splitlines()) < marks:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)


def test_sigint_during_an_audit_exits_130_and_leaves_nothing(tmp_path):
    process = _start(tmp_path, "--samples", str(10**9), "--report", "reports", "--json", "r.json")
    try:
        # the model's two checking traces write a mark each; from the fourth on, the
        # audit's Monte Carlo chunks are running
        _wait_for(tmp_path / "running", process, marks=4)
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_INTERRUPTED, err
    lines = err.strip().splitlines()
    assert lines[-1] == "dpaudit: interrupted; no verdict, nothing was published.", err
    assert "Segmentation" not in err and "Traceback" not in err
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["running", "user.py"], left


GC_INTERRUPT = """
import gc, signal, sys, time
from dpaudit.cli.main import main

# a pytest-xdist worker ignores SIGINT and its children inherit that; a shell's program has
# Python's own handler
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["dpaudit"]
main()  # no command: prints the help, and installs the program's hooks
fired = []

def interrupted_here(phase, info):  # Ctrl-C arriving while a gc callback runs (JAX has one)
    if not fired:
        fired.append(1)
        raise KeyboardInterrupt

gc.callbacks.append(interrupted_here)
try:
    gc.collect()
    start = time.monotonic()
    while time.monotonic() - start < 30:
        pass
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_a_ctrl_c_dropped_inside_a_gc_callback_still_interrupts_the_program():
    """Python drops ("Exception ignored") a KeyboardInterrupt raised in a gc callback; the
    ``dpaudit`` program interrupts itself again instead of running on."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", GC_INTERRUPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "interrupted", out.stdout[-500:] + out.stderr
