"""`gno-tui import` and `gno-tui export`: facts in from a file, the whole store out, with
--output checked so that an export never writes over the store's own files.

Split from gno_tui.commands, which loads this module only when one of the two runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.facade import ImportRequest, MemoryFailure, MemoryService
from gno_tui.cli_io import default_caller, emit_json
from gno_tui.cli_store import MAX_JSON_DEPTH, open_store


def cmd_import(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import progress_reporter

    store = open_store(args)
    with progress_reporter(enabled=not args.json, label="Importing") as progress:
        request = ImportRequest(
            Path(args.path),
            fmt=args.format,
            scopes=args.scopes,
            collection=args.collection,
            dry_run=args.dry_run,
            caller=f"import:{default_caller(None)}",
        )
        try:
            report = store.interop.import_file(request, progress=progress)
        except RecursionError:  # JSON nested too deep for the decoder (every item is read
            # and checked before anything is written, so nothing was imported)
            raise MemoryFailure(
                "MEMORY_IMPORT_INVALID",
                f"{args.path}: arrays and objects nest too deep (at most {MAX_JSON_DEPTH} "
                "levels make sense in a memory). Flatten the data. Nothing was imported.",
            ) from None
    if args.json:
        # What emit_json(report.to_json()) prints, a piece at a time: a report has a line
        # per item, and an import's memory is bounded by its batch, not by its file.
        for chunk in report.json_chunks():
            sys.stdout.write(chunk)
        sys.stdout.write("\n")
    else:
        from gno_tui.cli_render import render_import

        render_import(report, dry_run=args.dry_run)
    return 0


# The home's own files: canonical (collections.yaml) or the index and its lock and secret.
_STORE_FILES = (
    "collections.yaml",
    "index.sqlite",
    "index.sqlite-wal",
    "index.sqlite-shm",
    "index.sqlite-journal",
    ".write.lock",
    ".keyed-secret",
)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _export_target(store: MemoryService, output: str, *, folder: bool) -> Path:
    """The resolved --output, refused (MEMORY_USAGE_INVALID, nothing written) when it would
    overwrite the store's canonical files or cannot be written as asked."""

    def refuse(why: str) -> MemoryFailure:
        return MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"--output {output} {why}; nothing was written. Export to a file or folder outside "
            "the collection roots, e.g. --output ~/gno-export.jsonl (jsonl, ob1) or "
            "--output ~/gno-export (gno).",
        )

    target = Path(output).expanduser().resolve()
    home = store.home.resolve()
    if target in {home / name for name in _STORE_FILES}:
        raise refuse(f"is the store's own file {target.name}")
    for row in store.collections():
        if not row.root:  # server mode: the collection has no folder to protect
            continue
        root = Path(row.root).resolve()
        if _inside(target, root):
            raise refuse(
                f"is inside the root of collection {row.name!r} ({root}), whose fact files "
                "are canonical"
            )
        if folder and _inside(root, target / "facts"):
            raise refuse(f"would write over the root of collection {row.name!r}")
    if folder:
        if target.exists() and not target.is_dir():
            raise refuse("is a file; --format gno writes a folder of fact files")
    elif target.is_dir():
        raise refuse("is a folder; --format jsonl and ob1 write one file")
    elif not target.parent.is_dir():
        raise refuse(f"is in a folder that does not exist ({target.parent})")
    return target


def cmd_export(args: argparse.Namespace) -> int:
    store = open_store(args)
    interop = store.interop
    if args.format == "gno":
        if not args.output:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID", "--format gno writes a folder: pass --output DIR."
            )
        folder = _export_target(store, args.output, folder=True)
        count = interop.export_gno(folder)
        summary = {"format": "gno", "output": str(folder), "facts": count}
        if args.json:
            emit_json(summary)
        else:
            from gno_tui.cli_render import render_export

            render_export(count, str(folder))
        return 0
    target = _export_target(store, args.output, folder=False) if args.output else None
    if args.format == "ob1":
        text = json.dumps(interop.export_ob1(), ensure_ascii=False) + "\n"
    else:
        text = "".join(
            json.dumps(item, ensure_ascii=False) + "\n" for item in interop.export_jsonl()
        )
    if target is not None:
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"Cannot write --output {args.output}: {exc.strerror or exc}. Pass a file in a "
                "folder you can write to.",
            ) from None
        if args.json:
            emit_json({"format": args.format, "output": str(target)})
    else:
        sys.stdout.write(text)
    return 0
