"""`gno-tui mcp --print-config CLIENT`: the snippet that connects an MCP client to this
machine's gno-tui (docs/agents.md); with --http (and --url), the snippet that connects it to a
`gno-tui serve` by URL with a bearer token from the host's environment (docs/server.md).

The snippet names the console script by its absolute path (hosts rarely have a virtualenv on
their PATH), the resolved home as `--home` (hosts do not pass a shell's $GNO_TUI_HOME), the
model folder as `--model` when one was chosen, and the index database as the env variable
GNO_TUI_DB (kept out of the argument list, which any process on the machine can read). The
server's own flags given with --print-config (`--allow-scope`, `--enable-write`) are carried
into the printed command. Nothing is opened or started: the snippet goes to stdout, a line
saying where it goes to stderr."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from engine.facade import MemoryFailure, normalize_scopes, resolve_home

SERVER_NAME = "gno-memory"

# Each client, and where its snippet goes (printed on stderr beside the snippet).
CLIENTS = {
    "claude-code": "Run this command once. --scope user serves every project; for one project "
    "use --scope project (it writes the project's .mcp.json, the JSON of --print-config json).",
    "claude-desktop": "Merge this into claude_desktop_config.json (macOS: ~/Library/Application "
    "Support/Claude/, Windows: %APPDATA%\\Claude\\, Linux: ~/.config/Claude/), then restart "
    "Claude Desktop.",
    "codex": "Add this table to ~/.codex/config.toml (or a trusted project's .codex/config.toml).",
    "cursor": "Merge this into .cursor/mcp.json in the project (or ~/.cursor/mcp.json for every "
    "project).",
    "json": "The standard `mcpServers` JSON: merge it into the client's configuration file "
    "(Claude Code's .mcp.json, Windsurf, Cline, and others take this shape).",
}


@dataclass(frozen=True)
class Launch:
    """How a client starts the server: a command, its arguments and extra environment."""

    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


def console_script() -> list[str]:
    """The absolute path of the running gno-tui console script (kept as given, so that a
    virtualenv's bin/ path stays the path), or `python -m gno_tui` when there is none."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.stem == "gno-tui" and argv0.is_file():
        return [str(argv0.absolute())]
    beside = Path(sys.executable).parent / "gno-tui"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("gno-tui")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "gno_tui"]


def _allowed(scopes: list[str] | None) -> list[str]:
    """--allow-scope as the server will bind them: each checked (MEMORY_SCOPES_INVALID, as the
    server would say at start), normalised, duplicates dropped, in the order given."""
    kept: list[str] = []
    for scope in scopes or []:
        for cleaned in normalize_scopes([scope]):
            if cleaned not in kept:
                kept.append(cleaned)
    return kept


def launch_for(args: argparse.Namespace) -> Launch:
    command, *prefix = console_script()
    options = ["--home", str(resolve_home(args.home))]
    model = args.model or os.environ.get("GNO_TUI_MODEL")
    if model:
        options += ["--model", str(Path(model).expanduser().absolute())]
    server = ["mcp"]
    for scope in _allowed(args.allow_scopes):
        server += ["--allow-scope", scope]
    if args.enable_write:
        server.append("--enable-write")
    db = args.db or os.environ.get("GNO_TUI_DB")
    return Launch(command, [*prefix, *options, *server], {"GNO_TUI_DB": db} if db else {})


def mcp_servers_json(launch: Launch) -> str:
    entry: dict[str, object] = {"command": launch.command, "args": launch.args}
    if launch.env:
        entry["env"] = launch.env
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2, ensure_ascii=False)


def toml_string(value: str) -> str:
    """A TOML basic string: quote, backslash and control characters (DEL included) escaped."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(ch, f"\\u{ord(ch):04X}"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def codex_toml(launch: Launch) -> str:
    lines = [
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {toml_string(launch.command)}",
        f"args = [{', '.join(toml_string(arg) for arg in launch.args)}]",
    ]
    if launch.env:
        lines += ["", f"[mcp_servers.{SERVER_NAME}.env]"]
        lines += [f"{name} = {toml_string(value)}" for name, value in launch.env.items()]
    return "\n".join(lines)


def claude_code_command(launch: Launch) -> str:
    # The server's name comes before -e: `claude mcp add`'s -e takes several values and
    # would swallow a name that follows it.
    words = ["claude", "mcp", "add", "--transport", "stdio", "--scope", "user", SERVER_NAME]
    for name, value in launch.env.items():
        words += ["-e", f"{name}={value}"]
    words += ["--", launch.command, *launch.args]
    return shlex.join(words)


# -- the HTTP form: an agent host connecting to `gno-tui serve` by URL with a bearer token ----

TOKEN_ENV = "GNO_TUI_TOKEN"  # the token stays in the host's environment, never in the snippet
DEFAULT_URL = "http://127.0.0.1:8765/mcp"


def http_snippet(client: str, url: str) -> str:
    header = f"Bearer ${{{TOKEN_ENV}}}"
    if client == "claude-code":
        words = ["claude", "mcp", "add", "--transport", "http", "--scope", "user", SERVER_NAME]
        return shlex.join([*words, url]) + f' --header "Authorization: Bearer ${TOKEN_ENV}"'
    if client == "codex":
        return "\n".join(
            [
                f"[mcp_servers.{SERVER_NAME}]",
                f"url = {toml_string(url)}",
                f"bearer_token_env_var = {toml_string(TOKEN_ENV)}",
            ]
        )
    if client == "cursor":  # Cursor expands ${env:NAME} in mcp.json
        entry: dict[str, object] = {
            "url": url,
            "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"},
        }
    else:
        entry = {"type": "http", "url": url, "headers": {"Authorization": header}}
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2, ensure_ascii=False)


def snippet(client: str, launch: Launch) -> str:
    if client == "claude-code":
        return claude_code_command(launch)
    if client == "codex":
        return codex_toml(launch)
    return mcp_servers_json(launch)


def print_config(args: argparse.Namespace) -> int:
    client = args.print_config
    if client not in CLIENTS:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"--print-config {client!r} is not a client gno-tui knows; use one of "
            f"{', '.join(CLIENTS)} (json: any client taking the standard mcpServers JSON).",
        )
    if getattr(args, "http", False) or getattr(args, "url", None):
        url = args.url or DEFAULT_URL
        if not url.startswith(("http://", "https://")):
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"--url {url!r} is not an http(s) URL; give the server's /mcp address, e.g. "
                f"{DEFAULT_URL}.",
            )
        sys.stdout.write(http_snippet(client, url) + "\n")
        where = (
            "Claude Desktop adds remote servers in Settings > Connectors; this JSON is for "
            "hosts that read mcpServers."
            if client == "claude-desktop"
            else CLIENTS[client]
        )
        sys.stderr.write(
            f"gno-tui: {where} Set {TOKEN_ENV} in the host's environment to a token from "
            "`gno-tui token create NAME --scope S` (it decides the scopes and whether writes "
            "apply or wait for review); the snippet never holds the token itself.\n"
        )
        return 0
    launch = launch_for(args)
    sys.stdout.write(snippet(client, launch) + "\n")
    mode = (
        "write-enabled (agents' adds and supersedes apply at once)"
        if args.enable_write
        else "propose-only (agents' adds and supersedes wait for a person: gno-tui review)"
    )
    bound = _allowed(args.allow_scopes)
    scopes = (
        f"bound to {', '.join(bound)}"
        if bound
        else "serving EVERY scope of its home (bind it with --allow-scope)"
    )
    sys.stderr.write(f"gno-tui: {CLIENTS[client]} This server is {mode}, {scopes}.\n")
    return 0
