"""Library audits with and without the draw helper process, side by side in one process.

Part 1 (where an audit's time goes, serial): per spec, the CPU seconds inside the sampler
(every ``ReleaseSource`` call) against the whole audit, the releases drawn and releases per
CPU second. Part 2: the helper's start (seconds until it answers, its resident memory).
Part 3: each spec warm once, then ``off`` / ``on`` alternated ``--rounds`` times: this
process's CPU, the helper's CPU (from /proc), wall seconds, and whether the record's
certified bound is the same.

Usage::

    PYTHONPATH=$PWD python benchmarks/draw_helper.py [--rounds 2] [SPEC ...]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = (
    "audits/libraries/diffprivlib-laplace.toml",
    "audits/libraries/diffprivlib-gaussian-analytic.toml",
    "audits/libraries/diffprivlib-mean.toml",
    "audits/libraries/diffprivlib-histogram.toml",
    "audits/libraries/opendp-laplace.toml",
    "audits/libraries/opendp-composition.toml",
    "audits/libraries/opendp-histogram.toml",
)


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=SPECS)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import dpaudit.blackbox.samplers as samplers
    from dpaudit.blackbox.drawhelper import HELPER_SETTING, shared_helper
    from dpaudit.cli.main import prepare, run_audit

    print(f"load average {os.getloadavg()}")
    inside = {"cpu": 0.0, "releases": 0}
    call = samplers.ReleaseSource._call

    def timed(self, n, key):
        start = time.process_time()
        try:
            return call(self, n, key)
        finally:
            inside["cpu"] += time.process_time() - start
            inside["releases"] += int(n)

    items = prepare([ROOT / s for s in args.specs])
    os.environ[HELPER_SETTING] = "off"
    print("part 1 (serial, warm): spec | audit CPU s | in sampler CPU s (share) | releases | per s")
    samplers.ReleaseSource._call = timed
    for item in items:
        run_audit(item)
        inside.update(cpu=0.0, releases=0)
        start = time.process_time()
        run_audit(item)
        cpu = time.process_time() - start
        share = inside["cpu"] / cpu
        rate = inside["releases"] / inside["cpu"]
        print(
            f"  {item.spec.name} | {cpu:.2f} | {inside['cpu']:.2f} ({share:.0%}) | "
            f"{inside['releases']} | {rate:.0f}"
        )
    samplers.ReleaseSource._call = call

    helper = shared_helper()
    start = time.perf_counter()
    helper.ready()
    pid = helper.process.pid
    print(
        f"part 2: helper answers after {time.perf_counter() - start:.2f} s wall, "
        f"{_proc_cpu(pid):.2f} s CPU, RSS {_rss_mb(pid):.0f} MB"
    )
    print("part 3: spec | mode | main CPU | helper CPU | wall | epsilon_lower")
    for item in items:
        os.environ[HELPER_SETTING] = "on"
        run_audit(item)  # the helper imports this sampler's library once
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                os.environ[HELPER_SETTING] = mode
                c, h, w = time.process_time(), _proc_cpu(pid), time.perf_counter()
                result = run_audit(item)
                cpu, hcpu = time.process_time() - c, _proc_cpu(pid) - h
                wall = time.perf_counter() - w
                print(
                    f"  {item.spec.name} | {mode} | {cpu:.2f} | {hcpu:.2f} | {wall:.2f} | "
                    f"{result.epsilon_lower!r}"
                )
    print(f"helper counts {helper.counts}; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
