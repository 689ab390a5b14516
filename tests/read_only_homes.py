"""Folders that really refuse writes, for the tests of a read-only home: root ignores
permission bits, so `chmod a-w` alone proves nothing when the tests run as root.

Two ways, each probed once (a `touch` in such a folder must be refused), so a test skips with
the reason when the machine does not allow it:

- `mount`: the home bind-mounted on itself read-only, in a private mount namespace
  (`unshare --mount`): the mount ends with the process and nothing else sees it;
- `permissions`: the home `chmod -R a-w` (the test does that), and the command run without
  the capabilities that let root write anyway (`setpriv --bounding-set`). An unprivileged user
  (`runuser`) cannot serve here: the interpreter lives under /root, which only root may enter.

`read_only_prefix(way, home)` is the argv prefix that runs a command so; `ReadOnlyHome` runs
the console script so, and `tree` says what a folder holds (to show nothing changed)."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# `sh -c` script: bind-mount the home on itself read-only, then run the command. In a private
# mount namespace, so the mount ends with the process and nothing else sees it.
_MOUNT_READ_ONLY = (
    'home="$1"; shift; mount --bind "$home" "$home" && '
    'mount -o remount,bind,ro "$home" && exec "$@"'
)
# The capabilities that let root write where permission bits say no.
_DAC_CAPS = "-dac_override,-dac_read_search,-fowner,-linux_immutable"


def read_only_prefix(way: str, home: Path) -> list[str]:
    """The argv prefix that runs a command with `home` read-only `way` ('mount' or
    'permissions'; for the latter the caller has made the home `chmod -R a-w`)."""
    if way == "mount":
        namespace = ["unshare", "--mount", "--propagation", "private"]
        return [*namespace, "sh", "-c", _MOUNT_READ_ONLY, "sh", str(home)]
    if os.geteuid() != 0:
        return []  # an ordinary user is held to the permission bits already
    return ["setpriv", f"--bounding-set={_DAC_CAPS}", "--inh-caps=-all"]


@functools.cache
def read_only_unavailable(way: str) -> str | None:
    """Why this machine cannot make a folder read-only this way, or None when it can: a
    probe `touch` in such a folder must be refused."""
    tool = "unshare" if way == "mount" else "setpriv"
    if shutil.which(tool) is None and (way == "mount" or os.geteuid() == 0):
        return f"{tool} is not installed"
    with tempfile.TemporaryDirectory() as folder:
        if way == "permissions":
            Path(folder).chmod(0o555)
        probe = [*read_only_prefix(way, Path(folder)), "sh", "-c", 'touch "$1/probe"', "sh", folder]
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
        Path(folder).chmod(0o755)
        refused = ("Read-only file system", "Permission denied")
        if done.returncode != 0 and any(word in done.stderr for word in refused):
            return None
        return f"cannot make a read-only folder this way here: {done.stderr.strip()[:200]}"


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder`: its bytes' hash (files), or 'folder'."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        found[key] = "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run_cli_on(
    cli: Any,
    args: Sequence[str],
    *,
    home: str,
    prefix: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Any:
    """The console script with `--home HOME` (any text, the empty one too), after `prefix`;
    checked as every CLI result is (tests/conftest.py check_cli_output, by Cli.finish)."""
    process = subprocess.Popen(
        [*prefix, cli.script, "--home", home, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or cli.env(home=Path(home)),
    )
    return cli.finish(args, process, timeout=120)


class ReadOnlyHome:
    """The console script on `home`, made read-only `way` ('mount' or 'permissions')."""

    def __init__(self, cli: Any, way: str, home: Path) -> None:
        self.cli, self.way, self.home = cli, way, home

    def __call__(self, *args: str) -> Any:
        prefix = read_only_prefix(self.way, self.home)
        return run_cli_on(self.cli, args, home=str(self.home), prefix=prefix)
