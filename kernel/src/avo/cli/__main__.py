"""``python -m avo.cli``: the same as the ``avo`` console script."""

from avo.cli import main

raise SystemExit(main())
