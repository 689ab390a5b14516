"""A home as the embedded store opens it: the folder checked (and made), whether this process
may write there, and where a collection's root lies in it. Standard library only: a cold CLI
call checks its --home here before it loads anything else.

- The folder: an empty `--home`, a file, a device or a path below a file is
  MEMORY_HOME_INVALID (exit 1), and nothing is made; a folder that cannot be made is
  MEMORY_HOME_READ_ONLY (exit 2).
- Read-only: a home whose folder, index or lock file this process may not write (a read-only
  mount, another user's home, `chmod a-w`) opens read-only (engine/storage/embedded/read_only.py):
  reads work, and every write is refused with MEMORY_HOME_READ_ONLY before anything is
  touched (MemoryEngine.write_lock).
- Roots: collections.yaml (engine/storage/embedded/collections_file.py) keeps a root inside the home
  relative to it, so a home can be moved or copied. The index keeps roots absolute; one copied
  or moved with its home (or a collections.yaml from before relative roots), whose roots point
  into the folder the home came from, is pointed at this home's own folders when the home
  opens (`copied_from`, `relocated`)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from engine.contract.errors import MemoryFailure

HOME_INVALID = "MEMORY_HOME_INVALID"
HOME_READ_ONLY = "MEMORY_HOME_READ_ONLY"
_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)

# -- the folder --------------------------------------------------------------------------------


def check_home_argument(value: str | Path) -> None:
    """An empty --home names no folder (it is not "the default home")."""
    if str(value) == "":
        raise MemoryFailure(
            HOME_INVALID,
            "--home is empty, so it names no folder. Pass the store's folder (e.g. "
            "--home ~/agent-memory), or leave --home out to use $GNO_TUI_HOME or the user "
            "data folder. Nothing was read or written.",
        )


def _kind(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a link to nothing"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a folder"


def _not_a_folder(home: Path, blocker: Path) -> MemoryFailure:
    what = _kind(blocker)
    where = (
        f"The home {home} is {what}, not a folder"
        if blocker == home
        else f"The home {home} cannot be a folder: {blocker} is {what}, not a folder"
    )
    return MemoryFailure(
        HOME_INVALID,
        f"{where}. Pass a folder with --home (or $GNO_TUI_HOME): an existing gno-tui home, or "
        "a new or empty folder for a new store. Nothing was written.",
    )


def make_home(home: Path) -> None:
    """The home folder, made if it does not exist; a coded error for a path that cannot be one
    (nothing is created then)."""
    if home.is_dir():
        return
    if os.path.lexists(home):
        raise _not_a_folder(home, home)
    blocker = next((p for p in home.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise _not_a_folder(home, blocker)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise MemoryFailure(
                HOME_READ_ONLY,
                f"Cannot create the home folder {home}: {exc.strerror} "
                f"({exc.filename or home}). Nothing was written. Create it where you may "
                "write, or pass --home a folder you can write in.",
            ) from None
        if exc.errno in (errno.ENOTDIR, errno.EEXIST):
            raise _not_a_folder(home, home) from None
        raise


def _writable(path: Path) -> bool:
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def not_writable(home: Path, index: Path | None) -> str | None:
    """Why this process may not write the store in `home` (whose SQLite index is `index`), in
    a few words, or None when it may."""
    blocked = next(
        (
            path
            for path in (home, index, home / ".write.lock")
            if path is not None and (path == home or path.exists()) and not _writable(path)
        ),
        None,
    )
    if blocked is None:
        return None
    try:
        read_only_mount = bool(os.statvfs(blocked).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_mount = False
    if blocked == home:
        what = "the home folder"
    else:  # the index, maybe elsewhere (--db), or the lock file
        what = str(blocked.relative_to(home) if blocked.is_relative_to(home) else blocked)
    if read_only_mount:
        return f"{what} is on a read-only file system"
    return f"{what} is not writable by this user (uid {os.geteuid()})"


def read_only_refusal(home: Path, why: str) -> MemoryFailure:
    return MemoryFailure(
        HOME_READ_ONLY,
        f"The home {home} is read-only ({why}), so gno-tui cannot write to it; nothing was "
        "written. Reads (recall, status, export, collection list) still work. To write, make "
        "it writable (remount it read-write, or give this user write permission), or copy it "
        "(`cp -a HOME NEW`) and pass --home NEW.",
    )


def make_root(root: Path, name: str) -> list[Path]:
    """`<root>/facts` made, and a probe file written and removed there, so that an unusable
    root (not writable, under a regular file) is MEMORY_COLLECTION_INVALID before collection
    `name` is recorded; the folders made here (for remove_folders if the add fails)."""
    facts = root / "facts"
    created: list[Path] = []
    try:
        for folder in [*reversed(facts.parents), facts]:
            if not folder.exists():
                folder.mkdir()
                created.append(folder)
        probe = facts / f".probe-{os.getpid()}-{os.urandom(4).hex()}"
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, b"probe")
        finally:
            os.close(descriptor)
            probe.unlink(missing_ok=True)
    except OSError as exc:
        remove_folders(created)
        raise MemoryFailure(
            "MEMORY_COLLECTION_INVALID",
            f"Cannot use {root} as the root of collection {name!r}: "
            f"{exc.strerror or exc} ({exc.filename or facts}). Choose a folder you can "
            "create and write files in (`gno-tui collection add NAME --path DIR`), or "
            "fix this one's permissions; no collection was added.",
        ) from None
    return created


def remove_folders(created: list[Path]) -> None:
    """The folders make_root made, removed again (innermost first) when the add failed."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            return


# -- roots -------------------------------------------------------------------------------------


def stored_root(home: Path, root: Path) -> str:
    """A root as collections.yaml keeps it: relative to the home when inside it."""
    if root.is_absolute() and root.is_relative_to(home):
        return root.relative_to(home).as_posix() or "."
    return str(root)


def resolved_root(home: Path, root: str) -> str:
    """A root as the index keeps it and the store uses it: absolute (a relative one is the
    home's)."""
    path = Path(root)
    return str(path if path.is_absolute() else home / path)


def copied_from(home: Path, roots: Mapping[str, str]) -> Path | None:
    """The folder this home was copied or moved from, if its roots say so: a collection whose
    root is `<X>/collections/<its name>` (where gno-tui makes one) for an X that is not this
    home, while this home has that folder itself."""
    for name, root in sorted(roots.items()):
        path = Path(root)
        if not path.is_absolute() or path.is_relative_to(home):
            continue
        if path.name == name and path.parent.name == "collections":
            original = path.parent.parent
            if (home / "collections" / name).is_dir():
                return original
    return None


def relocated(home: Path, original: Path | None, root: str) -> str:
    """`root` (absolute) in this home when it lay in the home it was copied from and this home
    has the same folder; any other root stays where it is."""
    path = Path(root)
    if original is None or not path.is_absolute() or not path.is_relative_to(original):
        return root
    mine = home / path.relative_to(original)
    return str(mine) if mine.is_dir() else root
