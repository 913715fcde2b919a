"""``python -m pathweave``: the same as the ``pathweave`` command."""

from pathweave.cli import main

raise SystemExit(main())
