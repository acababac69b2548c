"""``python -m avo.cli``: the same as the ``avo`` console script."""

from avo.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
