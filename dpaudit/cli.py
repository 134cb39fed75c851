"""Command-line entry point ``dpaudit``.

The audit engine and the audit-suite runner are later milestones; until they
land, ``dpaudit run`` says so plainly and exits with status 2 so that no one
mistakes it for a passing audit. ``dpaudit info`` reports the configuration.
"""

from __future__ import annotations

import argparse
import sys

import jax

import dpaudit

NOT_YET = (
    "dpaudit run: the audit engine and the audit-suite runner are not implemented yet, "
    "so nothing was audited and no report was written."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dpaudit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=dpaudit.__version__)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run an audit spec or a folder of specs (not there yet)")
    run.add_argument("target", nargs="?", default="audits/")
    run.add_argument("--report", default=None)
    sub.add_parser("info", help="show the version and the JAX configuration")
    args = parser.parse_args(argv)
    if args.command == "info":
        print(f"dpaudit {dpaudit.__version__}")
        print(
            f"jax {jax.__version__}, backend {jax.default_backend()}, "
            f"x64 {'on' if jax.config.jax_enable_x64 else 'off'}"
        )
        return 0
    if args.command == "run":
        print(NOT_YET, file=sys.stderr)
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
