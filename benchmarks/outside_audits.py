"""Where a warm ``dpaudit audit`` run spends the time outside its audits (session 14, issue 29).

Run: ``PYTHONPATH=$PWD python benchmarks/outside_audits.py [SPECS...] [--other ROOT]
[--cache DIR] [--report] [--rounds N]``. Each checkout (``--other`` first, e.g. an unpacked
older commit, then this one; alternating for ``--rounds``) runs ``dpaudit audit SPECS`` in a
fresh child process with the stage functions of the driver wrapped by wall and CPU timers
(``time.perf_counter`` / ``time.process_time``, every thread of the child): startup imports,
reading and building each spec (split by the spec reader's stages), the audits themselves
(the time inside ``run_audit`` beside the audits' own ``seconds``), what runs between audits,
the report's figures and page, the JSON, and the end of the process after ``main`` returned
(measured by the parent: the child's whole wall and CPU, reaped children included, minus what
it reported). The cache under ``DIR/<checkout>`` is the checkout's own: fill it first with one
run (``--fill``). Seconds depend on the load average, printed before and after each run.
"""

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READER = ("load_spec", "with_overrides", "resolve_mechanism", "load_pair", "check_model_runs",
          "check_model_traces", "resolve_blackbox", "blackbox_features", "check_sampler_runs",
          "check_sampler_traces", "resolve_training", "check_pair_differs")  # fmt: skip
DRIVER = ("_prepare_one", "_run_checked", "release_memory", "_outcome", "_correct_suite",
          "_print_table", "_print_assumptions", "_write_outputs")  # fmt: skip
REPORT = ("write_report", "write_json", "_whitebox_plots", "_blackbox_section",
          "_training_section", "_whitebox_section")  # fmt: skip


def _wrap(module, name: str, spent: dict, prefix: str = "", per_call: dict | None = None) -> None:
    """Wrap ``module.name`` (looked up by name, as the module calls it) with timers; with
    ``per_call``, each call's times are kept under its first argument (a spec's path)."""
    inner = getattr(module, name, None)
    if inner is None:
        return
    key = prefix + name

    def wrapper(*args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            dw, dc = time.perf_counter() - w, time.process_time() - c
            spent[key][0] += dw
            spent[key][1] += dc
            spent[key][2] += 1
            if per_call is not None and args:
                per_call[str(args[0])] = (dw, dc)

    setattr(module, name, wrapper)


def child(argv: list[str], out: Path) -> None:
    """Run ``dpaudit`` with ``argv`` in this process, timers around the stages; JSON to ``out``."""
    w0, c0 = time.perf_counter(), time.process_time()
    import dpaudit.cli.main as cli
    import dpaudit.io.report as report
    import dpaudit.io.spec as reader

    spent = collections.defaultdict(lambda: [0.0, 0.0, 0])
    spent["import cli"] = [time.perf_counter() - w0, time.process_time() - c0, 1]
    for name in READER:
        _wrap(reader, name, spent, "spec.")
    per_spec = {}
    for name in DRIVER:
        _wrap(cli, name, spent, per_call=per_spec if name == "_prepare_one" else None)
    for name in REPORT:
        _wrap(report, name, spent, "report.")
    modules_before = len(sys.modules)
    code = cli.main(argv)
    spent["main"] = [time.perf_counter() - w0, time.process_time() - c0, 1]
    document = {
        "code": code,
        "spent": spent,
        "per_spec": per_spec,
        "modules": len(sys.modules) - modules_before,
    }
    out.write_text(json.dumps(document))


def _run(root: Path, specs, cache: Path, report: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "DPAUDIT_CACHE": "1"}
    with tempfile.TemporaryDirectory() as folder:
        stages, results = Path(folder) / "stages.json", Path(folder) / "results.json"
        argv = ["audit", *specs, "-q", "--cache-dir", str(cache), "--json", str(results)]
        if report:
            argv += ["--report", str(Path(folder) / "report")]
        command = [sys.executable, str(Path(__file__).resolve()), "--child", str(stages), "--",
                   *argv]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not stages.exists() or not results.exists():
            raise SystemExit(f"{root}: exit {done.returncode}: {done.stderr[-800:]}")
        document = json.loads(stages.read_text())
        audits = json.loads(results.read_text())["audits"]
    document["wall"], document["cpu"] = (
        wall,
        (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    )
    document["audit_seconds"] = sum(float(a["seconds"]) for a in audits)
    document["count"] = len(audits)
    return document


def _print(name: str, d: dict) -> None:
    spent = d["spent"]
    main_wall, main_cpu = spent["main"][:2]
    print(f"\n{name}: {d['count']} audits, wall {d['wall']:.1f} s, CPU {d['cpu']:.1f} s "
          f"(reaped children included), audits' own seconds {d['audit_seconds']:.1f}, "
          f"outside {d['wall'] - d['audit_seconds']:.1f} s wall")  # fmt: skip
    rows = [(k, *v) for k, v in spent.items()]
    rows.append(
        ("end (after main, parent-measured)", d["wall"] - main_wall, d["cpu"] - main_cpu, 1)
    )
    rows.append(("run_audit minus seconds", spent["_run_checked"][0] - d["audit_seconds"], None,
                 None))  # fmt: skip
    print("| stage | wall s | CPU s | calls |\n| --- | --- | --- | --- |")
    for key, wall, cpu, calls in sorted(rows, key=lambda r: -r[1]):
        cpu_text = "" if cpu is None else f"{cpu:.2f}"
        print(f"| {key} | {wall:.2f} | {cpu_text} | {calls or ''} |")
    top = sorted(d["per_spec"].items(), key=lambda kv: -kv[1][1])[:12]
    print("heaviest preparations (wall, CPU s): " + ", ".join(
        f"{Path(k).stem} {w:.2f}/{c:.2f}" for k, (w, c) in top))  # fmt: skip


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[4:], Path(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=["audits/"])
    parser.add_argument("--other", type=Path, help="another checkout to run first, e.g. the base")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "outside")
    parser.add_argument("--no-report", action="store_true", help="leave out --report")
    parser.add_argument("--fill", action="store_true", help="one discarded run per checkout first")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--save", type=Path, help="keep every run's stages as JSON here")
    args = parser.parse_args()
    roots = ([args.other.resolve()] if args.other else []) + [ROOT]
    runs = []
    for root in roots if args.fill else ():
        _run(root, args.specs, args.cache / root.name, not args.no_report)
    for rnd in range(args.rounds):
        for root in roots:
            load = os.getloadavg()[0]
            d = _run(root, args.specs, args.cache / root.name, not args.no_report)
            d["root"], d["load"] = str(root), (load, os.getloadavg()[0])
            _print(f"{root.name} round {rnd} (load {load:.1f} -> {d['load'][1]:.1f})", d)
            runs.append(d)
    if args.save:
        args.save.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
