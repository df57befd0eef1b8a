"""Generate ``exercises/`` from ``solutions/``: ``python -m minicompile.grading.generate [--check]``.

Each region fenced by ``### BEGIN SOLUTION <id>: <goal>`` / ``### END SOLUTION`` becomes::

    raise NotImplementedError("Exercise <id>: <goal> (roughly N lines)")

at the fence's indentation. ``--check`` rewrites nothing and exits 1 when a committed stub differs
from what generation would produce (CI runs this).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from . import REPO_ROOT

BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION (?P<id>\d+\.\d+): (?P<goal>.+?)\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")


def make_stub(source: str, filename: str = "<solution>") -> str:
    out, region = [], None
    for lineno, line in enumerate(source.splitlines(keepends=True), 1):
        if region is None:
            m = BEGIN.match(line)
            if m:
                region = (m, lineno, 0)
            elif "### BEGIN SOLUTION" in line:
                raise SyntaxError(f"{filename}:{lineno}: write '### BEGIN SOLUTION <id>: <goal>'")
            else:
                out.append(line)
        elif END.match(line):
            m, start, n = region
            msg = f"Exercise {m['id']}: {m['goal']} (roughly {max(n, 1)} lines)"
            out.append(f"{m['indent']}raise NotImplementedError({msg!r})\n")
            region = None
        elif line.strip() and not line.strip().startswith("#"):
            region = (region[0], region[1], region[2] + 1)
    if region is not None:
        raise SyntaxError(f"{filename}:{region[1]}: BEGIN SOLUTION without END SOLUTION")
    return "".join(out)


def generate(check: bool = False) -> list[str]:
    """Write (or with check=True, compare) every stub; return the files that differ."""
    src_dir, dst_dir = os.path.join(REPO_ROOT, "solutions"), os.path.join(REPO_ROOT, "exercises")
    differ = []
    for name in sorted(os.listdir(src_dir)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(src_dir, name)) as f:
            stub = make_stub(f.read(), name)
        dst = os.path.join(dst_dir, name)
        current = open(dst).read() if os.path.exists(dst) else None
        if current != stub:
            differ.append(name)
            if not check:
                with open(dst, "w") as f:
                    f.write(stub)
    return differ


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = p.parse_args()
    differ = generate(check=args.check)
    if args.check and differ:
        print("exercises/ is stale for: " + ", ".join(differ))
        print("run: python -m minicompile.grading.generate")
        return 1
    print(("would update" if args.check else "updated") + f": {differ or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
