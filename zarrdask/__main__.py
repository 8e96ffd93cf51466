"""``python -m zarrdask``: the command line."""

from .cli import main

raise SystemExit(main())
