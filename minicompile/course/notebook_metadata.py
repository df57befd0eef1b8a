"""A notebook's metadata as JupyterLab writes it, the same on every machine.

Opening a notebook in JupyterLab rewrites two entries of its metadata when the kernel starts:
``kernelspec.display_name`` (the installed kernel's name, ``Python 3 (ipykernel)``) and
``language_info.version`` (the Python running the kernel). Neither is the course's content, so
the notebooks are committed with the first as the lab writes it and without the second, and
``.gitattributes`` sends every notebook through this file as a git filter (``course.sh`` sets it
up): checking a notebook out writes the version of the course's Python into it (``--smudge``),
as the lab will, and committing takes it out again (``--clean``). So a notebook only opened in
the lab is byte for byte what git checked out: ``git status`` is clean and ``git pull`` merges.

    python minicompile/course/notebook_metadata.py --clean < nb.ipynb    # git's filters
    python minicompile/course/notebook_metadata.py --smudge < nb.ipynb
    python minicompile/course/notebook_metadata.py notebooks/*.ipynb     # normalise in place

Standard library only, run by path: git runs it on every notebook it reads or writes, and
importing the package (torch) each time would make ``git status`` take seconds a notebook.
"""

from __future__ import annotations

import json
import platform
import re
import sys

# what ``python -m ipykernel install --name python3`` (course.sh) registers, and so what the lab
# writes into a notebook it opens with that kernel
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
MACHINE_DEPENDENT = ("version",)  # language_info entries that name the running Python


# Where the machine that ran a cell put things, as outputs quote it (a warning's file, a graph's
# source line): the installed packages, the course's own folders, the home directory. Outputs
# are committed with the part every machine shares: ``torch/_inductor/lowering.py:7836``, not
# ``/opt/torch/.venv/lib/python3.12/site-packages/torch/_inductor/lowering.py:7836``.
_START = r"(?<![\w.~/:-])"  # a path's first character, not the middle of a word or a URL
_FOLDERS = r"(?:/[^\s\"'/:()\[\].][^\s\"'/:()\[\]]*)+"  # /a/b (no hidden folder: ~/.cache)
MACHINE_PATHS = [
    (re.compile(_START + r"(?:/[^\s\"'/:()\[\]]+)+/(?:site|dist)-packages/"), ""),
    (re.compile(_START + _FOLDERS + r"/(minicompile|notebooks|exercises|solutions|tests)/"),
     r"\1/"),
    (re.compile(_START + r"/(?:root|home/[^\s/\"']+)/"), "~/"),
]


def without_machine_paths(text: str) -> str:
    for pattern, replacement in MACHINE_PATHS:
        text = pattern.sub(replacement, text)
    return text


def _scrub(value):
    """An output's text fields (a string, or a list of lines) without machine paths."""
    if isinstance(value, str):
        return without_machine_paths(value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):  # a display's data by MIME type: the text ones (not base64 PNGs)
        return {k: _scrub(v) if k.startswith("text/") else v for k, v in value.items()}
    return value


def normalise(nb: dict) -> dict:
    """``nb`` (a notebook's JSON) with the metadata every machine writes alike, and its outputs
    without the paths of the machine that ran them (``MACHINE_PATHS``)."""
    meta = nb.setdefault("metadata", {})
    meta["kernelspec"] = dict(KERNELSPEC)
    info = meta.get("language_info")
    if isinstance(info, dict):
        for key in MACHINE_DEPENDENT:
            info.pop(key, None)
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            for key in ("text", "data", "traceback", "evalue"):
                if key in output:
                    output[key] = _scrub(output[key])
    return nb


def as_the_lab_writes(nb: dict) -> dict:
    """``nb`` with the Python version the lab's kernel (this Python) will write into it."""
    info = normalise(nb)["metadata"].get("language_info")
    if isinstance(info, dict):
        info["version"] = platform.python_version()
    return nb


def dumps(nb: dict) -> str:
    """JSON text as nbformat (and so JupyterLab) writes a notebook: sorted keys, one-space
    indent, text as it is (no ``\\u`` escapes)."""
    text = json.dumps(nb, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False)
    return text + "\n"


def normalised_text(text: str, how=normalise) -> str:
    """The notebook ``text`` normalised; text that is not a notebook (a file in the middle of a
    merge, with conflict markers) is returned as it is, for git to report."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError:
        return text
    return dumps(how(nb)) if isinstance(nb, dict) else text


FILTERS = {"--clean": normalise, "--smudge": as_the_lab_writes}


def main(argv: list[str]) -> int:
    if len(argv) == 1 and argv[0] in FILTERS:
        sys.stdout.write(normalised_text(sys.stdin.read(), FILTERS[argv[0]]))
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    for path in argv:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = normalised_text(text)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"normalised {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
