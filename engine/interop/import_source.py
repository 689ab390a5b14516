"""Where an import's items come from, read as often as the import needs them: once to check
every item before anything is written, once more to import them, a batch at a time
(engine/interop/import_run.py). So a JSONL file is read a line at a time, never held whole;
an OB1 or mem0 export (one JSON document) or a GNO fact folder is read whole once (at most
formats.MAX_IMPORT_BYTES).

Between its two readings a JSONL file could change: each reading takes a digest of the bytes
it read, and the import is refused unless both agree."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG

from engine.contract.errors import MemoryFailure
from engine.interop.formats import (
    MAX_IMPORT_BYTES,
    Incoming,
    check_format,
    jsonl_item,
    read_document,
)
from engine.storage.embedded.factfiles import FactFileError, iter_fact_paths, read_fact_file

# Bytes read from a JSONL file at a time.
READ_CHUNK = 1 << 20


def _bad(where: str, why: str) -> MemoryFailure:
    return MemoryFailure("MEMORY_IMPORT_INVALID", f"{where}: {why}. Nothing was imported.")


class ImportSource:
    """The items of one import source (a file or a folder) in one format."""

    def __init__(self, path: Path, fmt: str, default_scopes: list[str]) -> None:
        check_format(path, fmt)
        self.path = path
        self.fmt = fmt
        self._scopes = default_scopes
        self._document: list[Incoming] | None = None
        self._digests: list[bytes] = []  # one per complete reading of a JSONL file
        self._piped: bytes | None = None  # a JSONL source that is not a file, read once

    def items(self) -> Iterator[Incoming]:
        """Every item, in order (a new reading each time)."""
        if self.fmt == "jsonl":
            yield from self._jsonl()
            return
        if self._document is None:
            self._document = (
                _read_gno(self.path)
                if self.fmt == "gno"
                else read_document(self.path, self.fmt, self._scopes)
            )
        yield from self._document

    def unchanged(self) -> None:
        """Refuse the import if the source changed between two complete readings."""
        if len(set(self._digests)) > 1:
            raise _bad(
                str(self.path),
                "it changed while it was being imported (it was read twice: once to check "
                "every item, once to import them); import it again once it is complete",
            )

    # -- JSONL, a line at a time ----------------------------------------------------------------

    def _jsonl(self) -> Iterator[Incoming]:
        digest = hashlib.sha256()
        for number, line in enumerate(self._lines(digest), start=1):
            item = jsonl_item(f"{self.path}:{number}", line, self._scopes)
            if item is not None:
                yield item
        self._digests.append(digest.digest())

    def _lines(self, digest: hashlib._Hash) -> Iterator[str]:
        """The file's lines as Path.read_text().splitlines() would give them for a file with
        \n, \r\n or \r line ends, checked for size and UTF-8 as they are read."""
        path = str(self.path)
        try:
            stat = self.path.stat()
            if stat.st_size > MAX_IMPORT_BYTES:
                raise _bad(path, f"larger than {MAX_IMPORT_BYTES // 2**20} MiB; split it")
            if self._piped is None and not S_ISREG(stat.st_mode):
                # A pipe (or a device) cannot be read twice: read once, kept (64 MiB at most).
                with self.path.open("rb") as pipe:
                    self._piped = pipe.read(MAX_IMPORT_BYTES + 1)
            file = io.BytesIO(self._piped) if self._piped is not None else self.path.open("rb")
        except OSError as exc:
            raise _bad(path, f"cannot be read ({exc.strerror})") from exc
        with file:
            offset, total, pending = 0, 0, bytearray()
            while True:
                try:
                    chunk = file.read(READ_CHUNK)
                except OSError as exc:
                    raise _bad(path, f"cannot be read ({exc.strerror})") from exc
                total += len(chunk)
                if total > MAX_IMPORT_BYTES:
                    raise _bad(path, f"larger than {MAX_IMPORT_BYTES // 2**20} MiB; split it")
                digest.update(chunk)
                pending += chunk
                end = pending.rfind(b"\n") + 1 if chunk else len(pending)
                complete = bytes(pending[:end])
                del pending[:end]
                # bytes.splitlines ends lines at \n, \r\n and \r only, as reading text does
                for raw in complete.splitlines(keepends=True):
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise _bad(path, f"not UTF-8 text (byte {offset + exc.start})") from exc
                    offset += len(raw)
                    yield text.rstrip("\r\n")
                if not chunk:
                    return


def _read_gno(path: Path) -> list[Incoming]:
    """A GNO fact folder, read whole (its fact files add up to at most MAX_IMPORT_BYTES)."""
    root = path if (path / "facts").is_dir() else path.parent if path.name == "facts" else path
    files = iter_fact_paths(root)
    if not files:
        raise _bad(str(path), "holds no facts/<date>/mem-*.md fact files")
    successors: set[str] = set()
    parsed = []
    total = 0
    for file in files:
        try:
            total += file.stat().st_size
            if total > MAX_IMPORT_BYTES:
                raise _bad(
                    str(path),
                    f"its fact files add up to more than {MAX_IMPORT_BYTES // 2**20} MiB; split it",
                )
            fact = read_fact_file(file)  # bounded and strict; errors start with the file
        except FactFileError as exc:
            raise MemoryFailure("MEMORY_IMPORT_INVALID", f"{exc}. Nothing was imported.") from exc
        except OSError as exc:
            raise _bad(str(file), f"cannot be read ({exc.strerror or exc})") from exc
        parsed.append((file, fact))
        successors.update(fact.supersedes)
    found = []
    for file, fact in parsed:
        uri_tail = f"/facts/{file.parent.name}/{fact.record_id}.md"
        found.append(
            Incoming(
                text=fact.text,
                scopes=fact.scopes,
                where=str(file),
                caller=fact.caller,
                session=fact.session,
                source=fact.source,
                created_at=fact.created_at,
                record_id=fact.record_id,
                docid=fact.workbench.get("docid"),
                supersedes=fact.supersedes,
                superseded=any(uri.endswith(uri_tail) for uri in successors),
                workbench={k: v for k, v in fact.workbench.items() if k != "docid"},
            )
        )
    return found
