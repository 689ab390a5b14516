"""PostgreSQL failing under the server mode (docs: /tmp/rel-docs/server-faults.md): a
restart while the console script, an MCP server and `gno-tui serve` write and a workbench's
change feed listens; sessions ended mid-transaction and mid-commit; a statement timeout;
every connection slot taken; a URL naming no database. Each time a caller gets an answer:
its write acknowledged, or refused with the retryable MEMORY_QUERY_FAILED (never
MEMORY_INTERNAL, never a hang); nothing acknowledged is lost and nothing refused is half
written; and the same processes answer again once the server does, without being restarted.

The PostgreSQL is one of this module's own (tests/pg/pg_fault_server.py); the writers are in
tests/pg/pg_fault_writers.py. No test sleeps to let something happen: each waits for a
condition (pg_isready, a backend waiting in pg_stat_activity, a process's answer) within a
bound."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from pg_fault_server import (
    CALL_TIMEOUT,
    CONSOLE_SCRIPT,
    FaultServer,
    child_env,
    connect,
    database_name,
    end_session,
    generation_of,
    run_cli,
    stored_texts,
    take_every_connection,
    wait_for,
    write_lock_holder,
    writer_waiting_on_a_lock,
)
from pg_fault_writers import (
    SCOPE,
    Listener,
    Writers,
    cli_remember,
    http_remember,
    http_server,
    make_token,
    mcp_client,
    mcp_remember,
)
from psycopg import sql
from sqlalchemy import make_url

from engine.contract.errors import MemoryFailure, ServerUnavailable
from engine.facade import open_service_patiently
from engine.retrieval.embeddings import EmbedderStatus

RETRYABLE = "MEMORY_QUERY_FAILED"


@pytest.fixture(scope="module")
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def url(fault_server: FaultServer) -> Iterator[str]:
    if not fault_server.running:  # a test that failed while the server was stopped
        fault_server.start()
    with fault_server.database() as database:
        yield database


@pytest.mark.slow
async def test_a_restart_under_three_writers_loses_nothing_and_every_process_reconnects(
    fault_server: FaultServer, url: str, tmp_path: Path
) -> None:
    errlog = (tmp_path / "mcp.log").open("w", encoding="utf-8")
    listener = Listener(tmp_path / "workbench", url)
    writers = Writers()
    try:
        async with (
            http_server(tmp_path / "http", url) as (http, http_process, http_log),
            mcp_client(tmp_path / "mcp", url, errlog) as mcp,
        ):
            writers.start("cli", lambda text: cli_remember(tmp_path / "cli", url, text))
            writers.start("mcp", lambda text: mcp_remember(mcp, text))
            writers.start("http", lambda text: http_remember(http, text))
            await writers.until("a write each", lambda log: len(log.acknowledged()) >= 1)
            assert await asyncio.to_thread(listener.saw, 1)  # listening before the restart
            await asyncio.to_thread(fault_server.stop)
            await writers.until("a refusal each", lambda log: len(log.refused()) >= 1)
            await asyncio.to_thread(fault_server.start)
            writers.restarted = True
            await writers.until(
                "a write each after the restart",
                lambda log: len(log.acknowledged(after_restart=True)) >= 1,
            )
            await writers.stop()
            # The same processes, never restarted, answer the refused writes when sent again:
            # stored once (`existing` if a refused one had been stored after all).
            retried = [
                await cli_remember(tmp_path / "cli", url, writers.logs["cli"].refused()[-1].text),
                await mcp_remember(mcp, writers.logs["mcp"].refused()[-1].text),
                await http_remember(http, writers.logs["http"].refused()[-1].text),
            ]
            assert http_process.poll() is None
            # The workbench's feed, never reopened, listens again: it reports the writes made
            # after the restart.
            assert await asyncio.to_thread(listener.saw, generation_of(url))
            assert listener.feed.connects >= 2  # type: ignore[attr-defined]
    finally:
        errlog.close()
        await writers.stop()
        listener.close()
    summary = writers.summary()
    outcomes = [o for log in writers.logs.values() for o in log.outcomes]
    refused = [o for o in outcomes if o.record_id is None]
    assert {o.code for o in refused} == {RETRYABLE}, summary  # never MEMORY_INTERNAL, no hang
    assert {o.status for o in writers.logs["http"].refused()} == {503}
    assert {o.status for o in writers.logs["cli"].refused()} == {2}
    assert all("Retry" in o.message for o in refused)
    # Nothing failed unexpectedly inside either server (that would have logged a traceback).
    assert not [line for line in http_log if "Traceback" in line]
    assert "Traceback" not in (tmp_path / "mcp.log").read_text(encoding="utf-8")
    stored = stored_texts(url)
    for outcome in [o for o in outcomes if o.record_id is not None] + retried:
        assert outcome.record_id is not None, outcome  # the retries were acknowledged too
        assert stored.get(outcome.record_id) == outcome.text, outcome
    # Each refused write went in at most once (a retried one whose first try had committed
    # answered `existing`).
    texts = list(stored.values())
    assert len(texts) == len(set(texts))


# -- one fault at a time -----------------------------------------------------------------------

# What another client does to stand in a writer's way: an open transaction that holds a lock
# every write needs (a long import holds the generation row the same way).
LOCK_THE_FACTS = "LOCK TABLE facts IN SHARE MODE"
LOCK_THE_GENERATION = "SELECT value FROM store_meta WHERE name = 'generation' FOR UPDATE"


async def test_sessions_ended_mid_transaction_are_a_coded_error_and_the_next_call_works(
    url: str, tmp_path: Path
) -> None:
    text = "Bob drinks black coffee"
    with (tmp_path / "mcp.log").open("w", encoding="utf-8") as errlog:
        async with mcp_client(tmp_path / "mcp", url, errlog) as mcp:
            assert (await mcp_remember(mcp, "Alice drinks green tea")).record_id
            before, generation = stored_texts(url), generation_of(url)
            with connect(url) as blocker:
                blocker.execute(LOCK_THE_FACTS)
                call = asyncio.create_task(mcp_remember(mcp, text))
                pid = blocker.info.backend_pid
                writer, waits_in = await asyncio.to_thread(writer_waiting_on_a_lock, url, pid)
                assert waits_in.startswith("INSERT INTO facts")
                holder = write_lock_holder(url)
                assert holder != writer
                # The server ends the MCP server's sessions, as an operator or a failover
                # does: the write lock's, then the one waiting mid-transaction.
                await asyncio.to_thread(end_session, url, holder)
                await asyncio.to_thread(end_session, url, writer)
                blocker.rollback()
            ended = await asyncio.wait_for(call, CALL_TIMEOUT)
            assert ended.code == RETRYABLE, ended
            assert "connection was lost" in ended.message and "Retry" in ended.message
            assert stored_texts(url) == before and generation_of(url) == generation
            # The same server process, its next call: new sessions, the write stored.
            again = await mcp_remember(mcp, text)
    assert again.record_id is not None and stored_texts(url)[again.record_id] == text


# A deferred trigger that makes a write's COMMIT wait for an advisory lock the test holds.
WAIT_AT_COMMIT = 4242
ADD_A_WAIT_AT_COMMIT = f"""
CREATE FUNCTION wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN PERFORM pg_advisory_xact_lock({WAIT_AT_COMMIT}); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT ON facts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_at_commit();
"""


async def test_a_session_ended_while_committing_says_the_outcome_is_unknown(
    url: str, tmp_path: Path
) -> None:
    text = "Frank drinks rooibos"
    async with http_server(tmp_path / "http", url) as (http, process, _log):
        assert (await http_remember(http, "Alice drinks green tea")).status == 201
        with connect(url, autocommit=True) as admin:
            admin.execute(ADD_A_WAIT_AT_COMMIT)
        with connect(url) as blocker:
            blocker.execute("SELECT pg_advisory_xact_lock(%s)", (WAIT_AT_COMMIT,))
            call = asyncio.create_task(http_remember(http, text))
            pid = blocker.info.backend_pid
            writer, waits_in = await asyncio.to_thread(writer_waiting_on_a_lock, url, pid)
            assert waits_in == "COMMIT"
            await asyncio.to_thread(end_session, url, writer)
            blocker.rollback()
        ended = await asyncio.wait_for(call, CALL_TIMEOUT)
        assert (ended.status, ended.code, ended.retry_after) == (503, RETRYABLE, "2"), ended
        assert "was stored is unknown" in ended.message and "Retry" in ended.message
        with connect(url, autocommit=True) as admin:
            admin.execute("DROP TRIGGER wait_at_commit ON facts")
        # Sent again to the same process, it is stored once, whichever way the commit went.
        retried = await http_remember(http, text)
        assert process.poll() is None
    assert retried.status in (200, 201) and retried.record_id is not None
    stored = stored_texts(url)
    assert stored[retried.record_id] == text and list(stored.values()).count(text) == 1


async def test_a_statement_timeout_is_a_coded_error_that_writes_nothing(
    url: str, tmp_path: Path
) -> None:
    home, text = tmp_path / "http", "Carol moved to Lyon"
    token = make_token(home, url)  # the database made and migrated first
    with connect(url, autocommit=True) as admin:  # every session the server opens has it
        name = sql.Identifier(database_name(url))
        admin.execute(sql.SQL("ALTER DATABASE {} SET statement_timeout = '2s'").format(name))
    async with http_server(home, url, token) as (http, _process, _log):
        assert (await http_remember(http, "Alice drinks green tea")).status == 201
        before, generation = stored_texts(url), generation_of(url)
        with connect(url) as blocker:
            blocker.execute(LOCK_THE_GENERATION)  # another writer's transaction, left open
            cut = await http_remember(http, text)
            blocker.rollback()
        assert (cut.status, cut.code, cut.retry_after) == (503, RETRYABLE, "2"), cut
        assert "statement_timeout" in cut.message and "rolled back" in cut.message
        assert stored_texts(url) == before and generation_of(url) == generation
        again = await http_remember(http, text)
    assert again.status == 201 and again.record_id is not None
    assert stored_texts(url)[again.record_id] == text


@pytest.mark.slow
async def test_a_server_out_of_connections_is_a_coded_error_until_one_is_free(
    fault_server: FaultServer, url: str, tmp_path: Path
) -> None:
    cli_home = tmp_path / "cli"
    async with http_server(tmp_path / "http", url) as (http, process, _log):
        assert (await http_remember(http, "Alice drinks green tea")).status == 201
        # Another client takes every slot; the server's own sessions end (as in a failover),
        # so its next request needs a new one.
        taken = take_every_connection(fault_server.url, database_name(url))
        try:
            refused_http = await http_remember(http, "Dave drinks water")
            refused_cli = await cli_remember(cli_home, url, "Erin drinks juice")
        finally:
            for session in taken:
                session.close()
        for refused in (refused_http, refused_cli):
            assert refused.code == RETRYABLE, refused
            assert "max_connections" in refused.message and "Retry" in refused.message
        assert (refused_http.status, refused_cli.status) == (503, 2)
        # Slots free again: the same server process and a new CLI call both write.
        freed = [await http_remember(http, "Dave drinks water")]
        freed.append(await cli_remember(cli_home, url, "Erin drinks juice"))
        assert process.poll() is None
    stored = stored_texts(url)
    assert [stored.get(str(o.record_id)) for o in freed] == [
        "Dave drinks water",
        "Erin drinks juice",
    ]


def test_a_url_naming_no_database_says_to_fix_the_url_not_to_retry(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    missing = make_url(fault_server.url).set(database="no_such_store")
    url = missing.render_as_string(hide_password=False)
    answer = run_cli(tmp_path / "cli", url, "recall", "tea", "--scope", SCOPE)
    assert (answer.returncode, answer.code) == (2, RETRYABLE), answer
    assert 'database "no_such_store" does not exist' in answer.message
    assert "Check the user, password and database name" in answer.message
    assert "Retry" not in answer.message  # waiting would not help


# -- a serving process started while PostgreSQL is down ----------------------------------------

WAITING = "waiting up to"
LISTENING = "listening on"


async def test_an_mcp_server_started_while_postgresql_is_down_waits_for_it_then_serves(
    fault_server: FaultServer, url: str, tmp_path: Path
) -> None:
    """An agent host that starts `gno-tui mcp` as PostgreSQL restarts gets a server, not a
    process that exited with the restart's "starting up"."""
    log_path = tmp_path / "mcp.log"
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", str(tmp_path / "mcp"), "--db", url, "mcp", "--enable-write"],
        env=child_env(),
    )
    info = types.Implementation(name="start-test", version="1.0")
    await asyncio.to_thread(fault_server.stop)
    with log_path.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            await asyncio.to_thread(wait_for, lambda: WAITING in log_path.read_text(), WAITING)
            await asyncio.to_thread(fault_server.start)
            async with ClientSession(
                read, write, client_info=info, read_timeout_seconds=CALL_TIMEOUT
            ) as session:
                await session.initialize()
                written = await mcp_remember(session, "Alice drinks green tea")
    said = log_path.read_text(encoding="utf-8")
    assert written.record_id is not None, written
    assert stored_texts(url)[written.record_id] == "Alice drinks green tea"
    assert said.count(WAITING) == 1 and "cannot be reached" in said, said
    assert "Traceback" not in said


async def test_gno_tui_serve_started_while_postgresql_is_down_waits_for_it_then_listens(
    fault_server: FaultServer, url: str, tmp_path: Path
) -> None:
    home = tmp_path / "http"
    token = make_token(home, url)  # the database made and migrated first
    await asyncio.to_thread(fault_server.stop)
    command = [str(CONSOLE_SCRIPT), "--home", str(home), "--db", url, "serve", "--port", "0"]
    process = subprocess.Popen(
        command, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr or ()), daemon=True)
    reader.start()
    try:
        said_waiting = lambda: any(WAITING in ln for ln in lines)  # noqa: E731
        await asyncio.to_thread(
            wait_for, lambda: said_waiting() or process.poll() is not None, WAITING
        )
        assert process.poll() is None and said_waiting(), lines
        await asyncio.to_thread(fault_server.start)
        await asyncio.to_thread(wait_for, lambda: any(LISTENING in ln for ln in lines), LISTENING)
        base = re.search(r"http://[^ ]+:\d+", next(ln for ln in lines if LISTENING in ln))
        assert base is not None, lines
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(
            base_url=base.group(0), headers=headers, timeout=CALL_TIMEOUT
        ) as client:
            written = await http_remember(client, "Bob drinks coffee")
    finally:
        process.terminate()
        process.wait(timeout=CALL_TIMEOUT)
        reader.join(timeout=CALL_TIMEOUT)
    assert written.status == 201 and written.record_id is not None, written
    assert stored_texts(url)[written.record_id] == "Bob drinks coffee"
    assert "".join(lines).count(WAITING) == 1 and "Traceback" not in "".join(lines)


def test_a_serving_process_gives_up_after_its_patience_and_a_bad_url_at_once(
    fault_server: FaultServer, url: str, tmp_path: Path
) -> None:
    """The wait has an end (the error then is the one a CLI call gets), and a URL that can
    never work is not waited for."""
    no_model = EmbedderStatus(None, "no model in this test")
    waits: list[float] = []
    fault_server.stop()
    try:
        with pytest.raises(ServerUnavailable, match="cannot be reached"):
            open_service_patiently(
                lambda _failure, left: waits.append(left),
                patience=1.0,
                home=tmp_path / "down",
                db_url=url,
                embedder_status=no_model,
            )
    finally:
        fault_server.start()
    assert len(waits) >= 2 and waits == sorted(waits, reverse=True), waits
    missing = make_url(fault_server.url).set(database="no_such_store")
    bad_url_waits: list[float] = []
    with pytest.raises(MemoryFailure, match="does not exist") as refused:
        open_service_patiently(
            lambda _failure, left: bad_url_waits.append(left),
            patience=60.0,
            home=tmp_path / "missing",
            db_url=missing.render_as_string(hide_password=False),
            embedder_status=no_model,
        )
    assert not isinstance(refused.value, ServerUnavailable)
    assert bad_url_waits == []
