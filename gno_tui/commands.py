"""What each CLI command does, once its arguments are parsed.

gno_tui.cli imports this module only when a command runs (every command opens the store), so
the engine façade loads here, at the top, and `gno-tui --help` and `--version` never load it."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.facade import (
    ImportRequest,
    MemoryFailure,
    MemoryService,
    RecallRequest,
    RememberRequest,
    keyed_json,
    open_service,
    parse_keyed_request,
)
from gno_tui.cli_io import (
    default_caller,
    default_session,
    emit_json,
    hide_password,
    read_stdin_bytes,
)

# How deeply arrays and objects may nest in a receipt file (as in every JSON the engine takes).
MAX_JSON_DEPTH = 32
# Options that name files or URLs: bytes that are not UTF-8 are legal in a POSIX path.
_PATH_OPTIONS = frozenset({"home", "db", "model", "path", "output", "request", "receipt"})


def _is_database_error(exc: BaseException) -> bool:
    """Raised by the database layer (SQLAlchemy, psycopg, sqlite3): the store, not the input."""
    return any(
        cls.__module__.split(".")[0] in ("sqlalchemy", "psycopg", "sqlite3", "_sqlite3")
        for cls in type(exc).__mro__
    )


def open_store(args: argparse.Namespace) -> MemoryService:
    try:
        return open_service(home=args.home, db_url=args.db, model=args.model)
    except Exception as exc:
        url = args.db or os.environ.get("GNO_TUI_DB") or ""
        if isinstance(exc, MemoryFailure):
            if url and exc.code == "MEMORY_QUERY_FAILED":
                raise MemoryFailure(exc.code, _without_password(exc.message, url)) from None
            raise
        if not _is_database_error(exc):
            raise
        where = hide_password(url) if url else "the SQLite index in the home (index.sqlite)"
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            _without_password(
                f"Cannot reach the index database {where}: {detail}. Check that the database "
                "server is running and the URL (--db or $GNO_TUI_DB) is right, or leave --db "
                "out to use the SQLite index in the home.",
                url,
            ),
        ) from None


def _without_password(message: str, url: str) -> str:
    from urllib.parse import unquote, urlsplit

    message = message.replace(url, hide_password(url))
    try:
        password = urlsplit(url).password
    except ValueError:
        return message
    for secret in {password, unquote(password)} if password else set():
        message = message.replace(secret, "***")
    return message


def _check_text_arguments(args: argparse.Namespace) -> None:
    """Text options (not paths) must be UTF-8; a byte that is not arrives as a surrogate."""
    for dest, value in vars(args).items():
        if dest in _PATH_OPTIONS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                flag = {
                    "text": "TEXT",
                    "query": "QUERY",
                    "scopes": "--scope",
                    "allow_scopes": "--allow-scope",
                }.get(dest, "--" + dest.replace("_", "-"))
                raise MemoryFailure(
                    "MEMORY_TEXT_INVALID",
                    f"{flag} is not valid UTF-8 text: character {exc.start + 1} is a byte that "
                    "does not decode. Pass UTF-8 (use a UTF-8 locale, or re-encode the input, "
                    "e.g. `iconv -f latin1 -t utf-8`).",
                ) from None


def _stdin_text(what: str, code: str, fix: str) -> str:
    """stdin decoded as strict UTF-8; bytes that are not are `code`, saying where and how."""
    data = read_stdin_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFailure(
            code,
            f"{what} is not valid UTF-8: byte 0x{data[exc.start]:02X} at offset {exc.start} "
            f"does not decode. {fix}",
        ) from None


def run(args: argparse.Namespace) -> int:
    _check_text_arguments(args)
    if args.command is None:
        from gno_tui.launch import open_workbench

        return open_workbench(args)
    handler = {
        "remember": cmd_remember,
        "recall": cmd_recall,
        "collection": cmd_collection,
        "review": cmd_review,
        "reindex": cmd_reindex,
        "status": cmd_status,
        "mcp": cmd_mcp,
        "import": cmd_import,
        "export": cmd_export,
        "memory": cmd_memory,
    }[args.command]
    return handler(args)


def _decision(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """Merge --add / --supersede URI with --decision / --predecessor; contradictions are errors."""
    implied = "add" if args.add else "supersede" if args.supersede else None
    if args.add and args.supersede:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "--add and --supersede contradict each other; pass one of them.",
        )
    if implied and args.decision and args.decision != implied:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"--{'add' if args.add else 'supersede'} contradicts --decision {args.decision}; "
            "pass one of them.",
        )
    if args.supersede and args.predecessor and args.predecessor != args.supersede:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "--supersede and --predecessor name different facts; pass one.",
        )
    return implied or args.decision, args.supersede or args.predecessor


def _json_depth_over(value: Any, limit: int) -> bool:
    """Does `value` nest arrays and objects deeper than `limit`? (No recursion.)"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def _read_receipt(path: str | None) -> Any:
    if path is None:
        return None
    fix = "Pass the saved output of `gno-tui recall ... --json` (UTF-8 JSON) or its receipt."
    try:
        data = read_stdin_bytes() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"Cannot read the receipt file {path}: {exc.strerror}. Save a recall "
            "with `gno-tui recall ... --json > receipt.json` and pass that file.",
        ) from exc
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} is not UTF-8 (byte 0x{data[exc.start]:02X} at offset "
            f"{exc.start}). {fix}",
        ) from None
    try:
        receipt = json.loads(raw)
    except RecursionError:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} nests arrays and objects too deep. {fix}",
        ) from None
    except json.JSONDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} is not JSON ({exc.msg} at line {exc.lineno}). Pass the "
            "saved output of `gno-tui recall ... --json` or its receipt object.",
        ) from exc
    if _json_depth_over(receipt, MAX_JSON_DEPTH):
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} nests arrays and objects more than {MAX_JSON_DEPTH} "
            f"deep. {fix}",
        )
    if not isinstance(receipt, dict):
        # A `null` would otherwise read as "no receipt" and silently skip the fence.
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} holds JSON {type(receipt).__name__}, not an object. Pass "
            "the saved output of `gno-tui recall ... --json` or its receipt object.",
        )
    return receipt


def cmd_remember(args: argparse.Namespace) -> int:
    decision, predecessor = _decision(args)
    text = (
        _stdin_text(
            "The fact text on stdin",
            "MEMORY_TEXT_INVALID",
            "Pass UTF-8 text (re-encode it, e.g. `iconv -f latin1 -t utf-8 | gno-tui remember -`).",
        )
        if args.text == "-"
        else args.text
    )
    request = RememberRequest(
        text=text,
        scopes=args.scopes,
        caller=default_caller(args.caller),
        session=default_session(args.session),
        decision=decision,
        predecessor=predecessor,
        predecessor_hash=args.predecessor_hash,
        collection=args.collection,
        source=args.source,
        receipt=_read_receipt(args.receipt),
        derived_from=args.derived_from,
    )
    result = open_store(args).remember(request)
    if args.json:
        emit_json(result)
    else:
        from gno_tui.cli_render import render_remember

        render_remember(result)
    failed = result.get("sync", {}).get("status") == "failed"
    return 2 if failed else 0


def cmd_recall(args: argparse.Namespace) -> int:
    request = RecallRequest(
        query=args.query,
        scopes=args.scopes,
        caller=default_caller(args.caller),
        session=default_session(args.session),
        max_facts=args.max_facts,
        max_tokens=args.max_tokens,
        collection=args.collection,
        egress=args.egress,
    )
    store = open_store(args)
    if args.json:
        emit_json(store.recall_ob1(request) if args.format == "ob1" else store.recall(request))
        return 0
    from gno_tui.cli_render import render_recall

    result = store.recall(request)
    empty = store.facts.no_match(request, result)  # why nothing came back, for a person
    shown = store.recall_as_ob1(result) if args.format == "ob1" else result
    render_recall(shown, args.format, no_match=empty)
    return 0


def cmd_collection(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import collection_json, render_collections

    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "Name an action: gno-tui collection add|list|set-policy (see --help).",
        )
    store = open_store(args)
    if args.action == "add":
        rows = [_add_collection(store, args)]
    elif args.action == "set-policy":
        store.collection(args.name)  # an unknown name first, before the policy is checked
        rows = [store.set_policy(args.name, args.policy, actor=default_caller(None))]
    else:
        rows = store.collections()
    if args.json:
        listing = [collection_json(row) for row in rows]
        emit_json({"collections": listing} if args.action == "list" else listing[0])
    else:
        render_collections(rows)
    return 0


def _add_collection(store: MemoryService, args: argparse.Namespace) -> Any:
    """Add a collection, its root checked first: the engine records the collection before it
    creates the folder, so an unusable root would leave a collection whose facts cannot be
    written. Folders made for the check are removed again if the add is refused."""
    if args.name in {row.name for row in store.collections()}:
        return store.add_collection(args.name, path=args.path, policy=args.policy)
    root = (
        Path(args.path).expanduser().resolve()
        if args.path
        else store.home / "collections" / args.name
    )
    created: list[Path] = []
    try:
        for folder in reversed([root / "facts", *(root / "facts").parents]):
            if not folder.exists():
                folder.mkdir()
                created.append(folder)
        with tempfile.TemporaryFile(dir=root / "facts"):
            pass
    except OSError as exc:
        _remove_empty(created)
        raise MemoryFailure(
            "MEMORY_COLLECTION_INVALID",
            f"Cannot use {root} as the root of collection {args.name!r}: "
            f"{exc.strerror or exc}. Pass --path DIR with a folder you can write to; no "
            "collection was added.",
        ) from None
    try:
        return store.add_collection(args.name, path=args.path, policy=args.policy)
    except BaseException:
        _remove_empty(created)
        raise


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            return


def cmd_review(args: argparse.Namespace) -> int:
    if not args.list:
        from gno_tui.launch import open_workbench

        return open_workbench(args, screen="review")
    proposals = open_store(args).curation.proposals(state=None if args.all else "pending")
    if args.json:
        emit_json({"proposals": proposals})
    else:
        from gno_tui.cli_render import render_proposals

        render_proposals(proposals)
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import progress_reporter

    store = open_store(args)
    with progress_reporter(enabled=not args.json, label="Reindexing fact files") as progress:
        report = store.reindex(progress)
    if args.json:
        emit_json(report)
    else:
        from gno_tui.cli_render import render_reindex

        render_reindex(report)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    report = open_store(args).status()
    if args.json:
        emit_json(report)
    else:
        retrieval = report["retrieval"]
        print(f"home       {report['home']}")
        print(f"database   {report['database']}")
        print(f"retrieval  {retrieval['backend']} ({', '.join(retrieval['capabilities'])})")
        print(f"matching   {report['matching']['mode']}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.print_config is not None:  # a snippet for an MCP client: nothing is opened
        from gno_tui.mcp_config import print_config

        return print_config(args)
    from gno_tui.mcp_server import serve

    serve(open_store(args), enable_write=args.enable_write, allowed_scopes=args.allow_scopes)
    return 0


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
        except RecursionError:  # JSON nested too deep for the decoder (the file is read whole
            # and checked before anything is written, so nothing was imported)
            raise MemoryFailure(
                "MEMORY_IMPORT_INVALID",
                f"{args.path}: arrays and objects nest too deep (at most {MAX_JSON_DEPTH} "
                "levels make sense in a memory). Flatten the data. Nothing was imported.",
            ) from None
    if args.json:
        emit_json(report.to_json())
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


def cmd_memory(args: argparse.Namespace) -> int:
    """The keyed API: one seed-003 request in, the response as compact JSON out."""
    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "Name an action: gno-tui memory remember|recall|search|get|history (see --help).",
        )
    result: dict[str, Any]
    if args.action in ("get", "history"):
        keyed = open_store(args).keyed
        lookup = keyed.get if args.action == "get" else keyed.history
        result = lookup(args.key, namespace=args.namespace)
    else:
        where = "stdin" if args.request == "-" else args.request
        try:
            raw = (
                _stdin_text(
                    "The request on stdin",
                    "MEMORY_REQUEST_INVALID",
                    "Pass the JSON request as UTF-8.",
                )
                if args.request == "-"
                else Path(args.request).read_text(encoding="utf-8")
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryFailure(
                "MEMORY_REQUEST_INVALID",
                f"Cannot read the request from {where}: {exc}. Pass a JSON "
                "file with --request FILE, or the JSON on stdin.",
            ) from exc
        request = parse_keyed_request(raw, where=f"The request ({where})")
        keyed = open_store(args).keyed
        if args.action == "remember":
            result = keyed.remember(
                request,
                namespace=args.namespace,
                caller=default_caller(args.caller),
                session=default_session(args.session),
            )
        else:
            run_query = keyed.recall if args.action == "recall" else keyed.search
            result = run_query(request, namespace=args.namespace)
    sys.stdout.write(keyed_json(result) + "\n")
    return 0
