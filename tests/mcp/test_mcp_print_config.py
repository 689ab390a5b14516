"""`gno-tui mcp --print-config CLIENT` (docs/agents.md): each printed configuration is parsed
as its client would read it (the `claude mcp add` command line, Codex's TOML table, the
`mcpServers` JSON) and the server is started exactly so, by the official MCP client over
stdio: that command, those arguments, and that environment (the SDK, like a host, passes on
only a few variables of its own: the test's GNO_TUI_* settings do not reach the server)."""

from __future__ import annotations

import json
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pg_homes
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_harness import CONSOLE_SCRIPT, fact_files, server_env, structured_error, structured_ok

CLIENTS = ("claude-code", "claude-desktop", "codex", "cursor", "json")
NAME = "gno-memory"
TOOLS = {"gno_remember", "gno_recall", "memory_remember", "memory_recall", "memory_search"}


@dataclass
class Launch:
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


def print_config(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`gno-tui [--home H] <args>` with the normal environment, no GNO_TUI_* variable set but,
    on a server run, the home's $GNO_TUI_DB (as a user of a server would have it)."""
    env = server_env(home)
    env.pop("GNO_TUI_MODEL")  # the printed config is the documented one: the bundled model
    argv = [str(CONSOLE_SCRIPT), *(["--home", str(home)] if home else []), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def parse(client: str, printed: str) -> Launch:
    """The printed snippet read as `client` reads it."""
    if client == "claude-code":
        words = shlex.split(printed)
        assert words[:3] == ["claude", "mcp", "add"], words
        split = words.index("--")
        options, (command, *args) = words[3:split], words[split + 1 :]
        # The name comes before any -e: `claude mcp add -e` takes several values.
        assert NAME in options
        named = options.index(NAME)
        env = {}
        for index, word in enumerate(options):
            if word == "-e":
                assert index > named, "an -e before the name swallows the name"
                key, _, value = options[index + 1].partition("=")
                env[key] = value
        assert options[:named] == ["--transport", "stdio", "--scope", "user"]
        return Launch(command, args, env)
    if client == "codex":
        entry = tomllib.loads(printed)["mcp_servers"][NAME]
    else:
        document = json.loads(printed)
        assert set(document) == {"mcpServers"} and set(document["mcpServers"]) == {NAME}
        entry = document["mcpServers"][NAME]
    assert set(entry) <= {"command", "args", "env"}, entry
    return Launch(entry["command"], entry["args"], entry.get("env", {}))


async def call(session: ClientSession, tool: str, **arguments: Any) -> types.CallToolResult:
    return await session.call_tool(tool, arguments)


@pytest.mark.parametrize("client", CLIENTS)
async def test_the_printed_configuration_starts_the_server(tmp_path: Path, client: str) -> None:
    home = tmp_path / "agent memory"  # a space: quoting must hold in every format
    index = tmp_path / "elsewhere" / "index.sqlite"
    index.parent.mkdir()
    # A database named apart from the home: a SQLite file elsewhere, or the test's server.
    database = pg_homes.database_env(home).get("GNO_TUI_DB", f"sqlite:///{index}")
    printed = print_config(
        "--db", database, "mcp", "--print-config", client,
        "--allow-scope", " User:Alice ", "--enable-write", home=home,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert "write-enabled" in printed.stderr and "bound to user:alice" in printed.stderr
    launch = parse(client, printed.stdout)
    # This machine's paths: the console script, the resolved home; the flags carried over.
    assert launch.command == str(CONSOLE_SCRIPT) and Path(launch.command).is_absolute()
    assert launch.args == [
        "--home", str(home.resolve()), "mcp", "--allow-scope", "user:alice", "--enable-write",
    ]  # fmt: skip
    assert launch.env == {"GNO_TUI_DB": database}  # the URL stays out of args

    params = StdioServerParameters(command=launch.command, args=launch.args, env=launch.env)
    info = types.Implementation(name=f"{client}-like-host", version="1.0")
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=info, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
        added = structured_ok(
            await call(
                session, "gno_remember", text="Alice prefers green tea", scopes=["user:alice"],
                decision="add",
            ),
            "remember",
        )  # fmt: skip
        assert added["outcome"] == "added"  # --enable-write reached the server
        recalled = structured_ok(
            await call(session, "gno_recall", query="green tea", scopes=["user:alice"]), "recall"
        )
        assert [f["text"] for f in recalled["facts"]] == ["Alice prefers green tea"]
        assert recalled["retrieval"]["mode"] == "hybrid"  # the bundled model, as documented
        assert added["record"]["caller"] == f"mcp:{client}-like-host"
        refused = await call(session, "gno_recall", query="tea", scopes=["user:bob"])
        structured_error(refused, "MEMORY_SCOPE_FORBIDDEN")  # --allow-scope reached it
    # The fact file is in the printed home (on a server: its row, in the export mirror), the
    # index in the printed database.
    (written,) = fact_files(home)
    assert "Alice prefers green tea" in written.read_text(encoding="utf-8")
    assert index.is_file() != pg_homes.server_mode() and not (home / "index.sqlite").exists()


async def test_a_plain_configuration_is_propose_only_and_serves_every_scope(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    printed = print_config("mcp", "--print-config", "json", home=home)
    assert printed.returncode == 0, printed.stderr
    assert "propose-only" in printed.stderr and "EVERY scope" in printed.stderr
    launch = parse("json", printed.stdout)
    # No database named: none printed (on a server run, the shell's $GNO_TUI_DB is carried).
    assert launch.args == ["--home", str(home.resolve()), "mcp"]
    assert launch.env == pg_homes.database_env(home)
    params = StdioServerParameters(command=launch.command, args=launch.args, env=launch.env)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        held = structured_ok(
            await call(session, "gno_remember", text="Bob likes water", scopes=["user:bob"],
                       decision="add"),
            "remember",
        )  # fmt: skip
        assert held["outcome"] == "candidates"  # held for a person: nothing written
    assert fact_files(home) == []


def test_the_json_clients_print_the_same_snippet(tmp_path: Path) -> None:
    printed = {
        client: print_config("mcp", "--print-config", client, home=tmp_path).stdout
        for client in ("claude-desktop", "cursor", "json")
    }
    assert len(set(printed.values())) == 1, printed
    where = {
        client: print_config("mcp", "--print-config", client, home=tmp_path).stderr
        for client in CLIENTS
    }
    assert "claude_desktop_config.json" in where["claude-desktop"]
    assert ".cursor/mcp.json" in where["cursor"] and "config.toml" in where["codex"]


def test_an_unknown_client_is_a_usage_error_listing_the_known_ones(tmp_path: Path) -> None:
    done = print_config("mcp", "--print-config", "vscode", home=tmp_path / "home")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("gno-tui: MEMORY_USAGE_INVALID: --print-config 'vscode'")
    assert all(client in done.stderr for client in CLIENTS), done.stderr
    assert not (tmp_path / "home").exists()  # nothing was opened or created


def test_a_malformed_allowed_scope_is_refused_before_anything_is_printed(tmp_path: Path) -> None:
    done = print_config(
        "mcp", "--print-config", "codex", "--allow-scope", "not a scope", home=tmp_path
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "MEMORY_SCOPES_INVALID" in done.stderr
