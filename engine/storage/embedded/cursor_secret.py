"""The embedded store's cursor key for the keyed API: `<home>/.keyed-secret`, 32 random bytes
as hex, created on first use with 0600 permissions."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from engine.contract.errors import MemoryFailure

SECRET_FILE = ".keyed-secret"
# The cursor keys of read-only homes, for this process only (store_secret).
_PROCESS_SECRETS: dict[str, bytes] = {}


def store_secret(home: Path) -> bytes:
    """The store's cursor key, made on first use. Created whole or not at all (a temp file
    hard-linked into place), so racing processes all end up reading the same secret. A home
    this process may not write (or whose secret it may not read) has none it can keep: this
    process's own then, so its cursors hold for as long as it runs."""
    path = Path(home) / SECRET_FILE
    for _ in range(50):
        try:
            value = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            value = ""
        except PermissionError:
            return _PROCESS_SECRETS.setdefault(str(path), secrets.token_bytes(32))
        if len(value) == 64:
            return bytes.fromhex(value)
        if not path.exists():
            temp = path.with_name(f"{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
            try:
                descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
                return _PROCESS_SECRETS.setdefault(str(path), secrets.token_bytes(32))
            try:
                with os.fdopen(descriptor, "w", encoding="ascii") as out:
                    out.write(secrets.token_hex(32) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                with contextlib.suppress(FileExistsError):  # another process won: read it
                    os.link(temp, path)
            finally:
                temp.unlink(missing_ok=True)
            continue
        raise MemoryFailure(
            "MEMORY_INTERNAL",
            f"The cursor secret {path} is not 64 hex digits. Remove it (cursors issued "
            "before become invalid) and run the request again.",
        )
    raise MemoryFailure("MEMORY_INTERNAL", f"Could not create the cursor secret {path}.")
