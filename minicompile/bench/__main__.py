"""``bash course.sh bench --help``: see cli.py."""

from .cli import main

raise SystemExit(main())
