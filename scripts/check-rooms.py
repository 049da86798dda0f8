#!/usr/bin/env python3
"""Every folder of the runtime and of the operator keeps its includes to its README's "May include:" line.

The one dependency rule of both trees: each README.md under runtime/ and operator/src/ opens a line
"May include: a, b/c, d/e.h, ..." (entries may be in backticks; the list ends at the first "." that
ends a sentence or at the end of the line). The line governs the .h/.cpp files of its own folder
(not of subfolders, which have their own README). A quoted include "x/y/file.h" is allowed when its
folder "x/y" is the file's own, or the folder is listed, or the header "x/y/file.h" is listed.
Include paths are relative to the tree's root (runtime/, or operator/src/ and, for the runtime's
contract headers an operator folder lists, runtime/). Every folder with sources needs such a README.
Prints "check-rooms: PASS ..." or "check-rooms: FAIL ..." last (ctest lint.rooms).

Usage: scripts/check-rooms.py [SOURCE_ROOT]
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
TREES = [ROOT / "runtime", ROOT / "operator" / "src"]
INCLUDE = re.compile(r'^#include "((?:[a-z_]+/)*[a-z_]+)/([a-z_0-9]+\.h)"', re.MULTILINE)
ENTRY = re.compile(r"^(?:[a-z_]+/)*[a-z_0-9]+(?:\.h)?$")


def allowed_entries(readme):
    """The entries of the README's "May include:" line (folders, or headers ending in .h), or None."""
    for line in readme.read_text().splitlines():
        if not line.startswith("May include:"):
            continue
        listed = re.split(r"\.(?:\s|$)", line.split(":", 1)[1], maxsplit=1)[0]
        entries = set()
        for part in re.split(r",|\band\b", listed):
            entry = part.strip().strip("`").rstrip("/")
            if entry:
                entries.add(entry)
        return entries
    return None


def check_tree(tree, bad):
    files = rooms = 0
    for readme in sorted(tree.rglob("README.md")):
        folder = readme.parent
        sources = sorted(list(folder.glob("*.h")) + list(folder.glob("*.cpp")))
        if folder == tree and not sources:
            continue  # the tree's own README only maps the rooms
        allowed = allowed_entries(readme)
        if allowed is None:
            bad.append(f"{readme.relative_to(ROOT)}: no 'May include:' line")
            continue
        for entry in sorted(allowed):
            if not ENTRY.match(entry):
                bad.append(
                    f"{readme.relative_to(ROOT)}: 'May include:' entry {entry!r} is neither a folder nor a header"
                )
        own = folder.relative_to(tree).as_posix()
        rooms += 1
        for src in sources:
            files += 1
            for included_folder, name in INCLUDE.findall(src.read_text()):
                header = f"{included_folder}/{name}"
                if included_folder != own and included_folder not in allowed and header not in allowed:
                    bad.append(
                        f"{src.relative_to(ROOT)} includes {header}, which {readme.relative_to(ROOT)} does not allow"
                    )
    folders = {p.parent for p in tree.rglob("*.cpp")} | {p.parent for p in tree.rglob("*.h")}
    for folder in sorted(folders):
        if not (folder / "README.md").exists():
            bad.append(f"{folder.relative_to(ROOT)}/ has sources but no README.md saying what it may include")
    return files, rooms


def main():
    bad, files, rooms = [], 0, 0
    for tree in TREES:
        f, r = check_tree(tree, bad)
        files, rooms = files + f, rooms + r
    for line in bad:
        print(f"check-rooms: {line}")
    if bad:
        print(f"check-rooms: FAIL: {len(bad)} problem(s)")
        return 1
    print(f"check-rooms: PASS: {files} files in {rooms} folders keep to their README's 'May include' line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
