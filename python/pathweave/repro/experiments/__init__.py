"""The registered experiments, one module each, named after the id with underscores
(``reno_square_root.py`` for ``reno-square-root``). Each defines ``EXPERIMENT``; the registry
finds them by itself (``pathweave.repro.registry``)."""
