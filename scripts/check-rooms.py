#!/usr/bin/env python3
"""Every runtime folder's includes keep to its README's "May include:" line.

Each runtime/**/README.md with a line "May include: a, b/c, ..." governs the .h/.cpp files in
its own folder (not in subfolders, which have their own README). A quoted include
"x/y/file.h" is allowed when its folder ("x/y") is the file's own (relative to runtime/) or is
listed. Prints "check-rooms: PASS ..." or "check-rooms: FAIL ..." last (ctest lint.rooms).

Usage: scripts/check-rooms.py [SOURCE_ROOT]
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
RUNTIME = ROOT / "runtime"
INCLUDE = re.compile(r'^#include "([a-z_]+(?:/[a-z_]+)*)/[a-z_0-9]+\.h"', re.MULTILINE)


def allowed_folders(readme):
    for line in readme.read_text().splitlines():
        if line.startswith("May include:"):
            return {f.strip() for f in line.split(":", 1)[1].split(",") if f.strip()}
    return None


def main():
    bad, files, rooms = [], 0, 0
    for readme in sorted(RUNTIME.rglob("README.md")):
        allowed = allowed_folders(readme)
        folder = readme.parent
        own = folder.relative_to(RUNTIME).as_posix()
        if allowed is None:
            bad.append(f"{readme.relative_to(ROOT)}: no 'May include:' line")
            continue
        rooms += 1
        for src in sorted(list(folder.glob("*.h")) + list(folder.glob("*.cpp"))):
            files += 1
            for included in INCLUDE.findall(src.read_text()):
                if included != own and included not in allowed:
                    bad.append(f"{src.relative_to(ROOT)} includes {included}/, which {own}/README.md does not allow")
    sources = {p.parent for p in RUNTIME.rglob("*.cpp")} | {p.parent for p in RUNTIME.rglob("*.h")}
    for folder in sorted(sources):
        if not (folder / "README.md").exists():
            bad.append(f"{folder.relative_to(ROOT)}/ has sources but no README.md saying what it may include")
    for line in bad:
        print(f"check-rooms: {line}")
    if bad:
        print(f"check-rooms: FAIL: {len(bad)} problem(s)")
        return 1
    print(f"check-rooms: PASS: {files} files in {rooms} folders keep to their README's 'May include' line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
