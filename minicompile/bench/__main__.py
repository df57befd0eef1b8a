"""``python -m minicompile.bench --help``: see cli.py."""

from .cli import main

raise SystemExit(main())
