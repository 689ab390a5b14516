"""The child process that writes a bulk write's staged fact files
(engine/storage/bulk/file_stager.py).

It is run as a script with `python -I -S`, so it imports nothing but the standard library and
starts in a few milliseconds. It reads frames from stdin (a header, then a name and a content):

- kind 0: a folder to write into, by number (the name is its path; made if missing);
- kind 1: a new file in a folder (refused if the name exists, as `O_EXCL` does);
- kind 2: the end: it answers one JSON line, {"ok": files written}, and exits.

On the first failure it answers {"errno", "strerror", "filename"} and exits without reading
further. When stdin ends without the end frame, the parent has gone (killed or failed): it
stops at once and writes nothing more. What it wrote stays in the staging folder, which the
next recovery rolls back, since no row names those files."""

# os.path, not pathlib: the child imports as little as it can, to start at once.
# ruff: noqa: PTH103, PTH118

import json
import os
import struct
import sys
from typing import Any

HEADER = struct.Struct(">BIHI")  # kind, folder number, name length, content length
FOLDER, FILE, END = 0, 1, 2
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
_BY_HANDLE = os.open in os.supports_dir_fd


def _answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def create_file(
    handle: int, folder: str | os.PathLike[str], name: str | bytes, content: bytes
) -> None:
    """A new file `name` in `folder` holding `content`, refused if the name exists: opened by
    name inside the folder's handle where the system allows it (no path lookup per file),
    else by path (`handle` -1). The bulk write's own staging in process uses it as well."""
    if handle >= 0:
        file = os.open(name, _NEW_FILE, 0o666, dir_fd=handle)
    else:
        file = os.open(os.path.join(folder, os.fsdecode(name)), _NEW_FILE, 0o666)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(file, view) :]
    finally:
        os.close(file)


def main() -> int:
    source = sys.stdin.buffer
    folders: dict[int, tuple[str, int]] = {}
    written = 0
    while True:
        header = source.read(HEADER.size)
        if len(header) < HEADER.size:
            return 3  # the parent went away before the end: stop here
        kind, number, name_length, size = HEADER.unpack(header)
        name, content = source.read(name_length), source.read(size)
        if len(name) < name_length or len(content) < size:
            return 3
        target = ""
        try:
            if kind == FOLDER:
                target = os.fsdecode(name)
                os.makedirs(target, exist_ok=True)
                handle = os.open(target, os.O_RDONLY) if _BY_HANDLE else -1
                folders[number] = (target, handle)
            elif kind == FILE:
                folder, handle = folders[number]
                target = os.path.join(folder, os.fsdecode(name))
                create_file(handle, folder, name, content)
                written += 1
            else:
                _answer({"ok": written})
                return 0
        except OSError as exc:
            _answer({"errno": exc.errno, "strerror": exc.strerror, "filename": target})
            return 1


if __name__ == "__main__":
    sys.exit(main())
