"""Layer 8, cli: the ``dpaudit`` command line (:mod:`~dpaudit.cli.main`), and nothing else."""
