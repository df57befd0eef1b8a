"""Generate the exercise stubs from ``solutions/``: ``bash course.sh python -m minicompile.grading.generate``.

Each region fenced by ``### BEGIN SOLUTION <id>: <goal>`` / ``### END SOLUTION`` becomes::

    raise NotImplementedError("Exercise <id>: <goal> (roughly N lines)")

at the fence's indentation.

``exercises/`` is the learner's: once a file there is edited it is never overwritten without
``--force``. Whether a file is still untouched is told by the pristine manifest,
``minicompile/grading/stubs.sha256``: the SHA-256 of every stub as the course ships it. So

- ``--check`` compares freshly generated stubs with that manifest, never with ``exercises/``
  (CI runs it; it passes for a learner who solved exercises, and fails only when ``solutions/``
  changed without regenerating);
- writing updates an exercise only if it is missing or still pristine (its hash is in the
  manifest), then records the new stubs' hashes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys

from . import REPO_ROOT

BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION (?P<id>\d+\.\d+): (?P<goal>.+?)\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
SOLUTIONS = os.path.join(REPO_ROOT, "solutions")
EXERCISES = os.path.join(REPO_ROOT, "exercises")
MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stubs.sha256")


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


def stubs(solutions: str = SOLUTIONS) -> dict[str, str]:
    """{file name: stub text} for every solution file, generated in memory."""
    out = {}
    for name in sorted(os.listdir(solutions)):
        if name.endswith(".py"):
            with open(os.path.join(solutions, name)) as f:
                out[name] = make_stub(f.read(), name)
    return out


def write_stubs(folder: str) -> None:
    """Write pristine stubs into ``folder`` (a scratch copy, e.g. to grade untouched stubs)."""
    os.makedirs(folder, exist_ok=True)
    for name, text in stubs().items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_manifest(path: str = MANIFEST) -> dict[str, str]:
    """{file name: hash of its pristine stub}, as ``sha256sum`` writes it."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {name: h for h, name in (line.split() for line in f if line.strip())}


def stale_manifest_entries(manifest: dict[str, str] | None = None) -> list[str]:
    """Files whose generated stub is not the one the manifest records (solutions/ changed)."""
    manifest = read_manifest() if manifest is None else manifest
    generated = {name: digest(text) for name, text in stubs().items()}
    return sorted(name for name in generated.keys() | manifest.keys()
                  if generated.get(name) != manifest.get(name))


def update_exercises(force: bool = False, exercises: str = EXERCISES,
                     manifest_path: str = MANIFEST) -> tuple[list[str], list[str]]:
    """Write the stubs into ``exercises`` and the manifest; return (written, kept).

    A file the learner edited (its hash is neither the old manifest's nor the new stub's) is
    kept unless ``force``."""
    old = read_manifest(manifest_path)
    written, kept = [], []
    for name, text in stubs().items():
        path = os.path.join(exercises, name)
        current = open(path).read() if os.path.exists(path) else None
        if current == text:
            continue
        if current is not None and digest(current) != old.get(name) and not force:
            kept.append(name)
            continue
        with open(path, "w") as f:
            f.write(text)
        written.append(name)
    with open(manifest_path, "w") as f:
        f.writelines(f"{digest(text)}  {name}\n" for name, text in stubs().items())
    return written, kept


def edited_exercises(exercises: str = EXERCISES) -> list[str]:
    """The learner's files: those in ``exercises`` that differ from their pristine stub."""
    manifest = read_manifest()
    return sorted(name for name in manifest
                  if os.path.exists(os.path.join(exercises, name))
                  and digest(open(os.path.join(exercises, name)).read()) != manifest[name])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bash course.sh python -m minicompile.grading.generate",
                                description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if the generated stubs differ from the pristine "
                        "manifest (exercises/ is not read)")
    p.add_argument("--force", action="store_true",
                   help="also overwrite exercises you edited (your work there is lost)")
    args = p.parse_args(argv)
    if args.check:
        stale = stale_manifest_entries()
        if stale:
            print("solutions/ changed but the stubs were not regenerated for: " + ", ".join(stale))
            print("(course maintainers) run: bash course.sh python -m minicompile.grading.generate")
            return 1
        edited = edited_exercises()
        print("the stubs are what solutions/ generates"
              + (f"; your edited exercises are kept as they are: {', '.join(edited)}"
                 if edited else ""))
        return 0
    written, kept = update_exercises(force=args.force)
    print(f"updated: {', '.join(written) or 'nothing'}")
    if kept:
        print(f"kept your edited {', '.join(kept)}: --force overwrites them with fresh stubs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
