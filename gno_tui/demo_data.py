"""The demo store's contents: what a developer's coding agent might have remembered over a
month, by whom and when. gno_tui/demo.py writes them through the engine."""

from __future__ import annotations

ALICE = "cli:alice"
CLAUDE = "mcp:claude-code"
CURSOR = "mcp:cursor"
PERSON = "tui:alice"

# (days ago, text, scopes, collection, caller, source)
FACTS: list[tuple[float, str, tuple[str, ...], str, str, str | None]] = [
    (
        29,
        "Alice's editor is Neovim with the LazyVim distribution.",
        ("user:alice",),
        "memory",
        ALICE,
        None,
    ),
    (
        29,
        "Alice prefers dark themes in every editor and terminal.",
        ("user:alice",),
        "memory",
        CLAUDE,
        "chat 2026-11-01",
    ),
    (
        28,
        "Alice works in the Europe/Paris time zone and starts at 9:00.",
        ("user:alice",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        27,
        "Alice wants commit messages in the imperative mood, under 72 characters.",
        ("user:alice", "project:gno-tui"),
        "memory",
        ALICE,
        None,
    ),
    (
        27,
        "Alice reviews pull requests in the afternoon, not before lunch.",
        ("user:alice",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        26,
        "gno-tui targets Python 3.11 and newer.",
        ("project:gno-tui",),
        "memory",
        ALICE,
        "pyproject.toml",
    ),
    (
        26,
        "gno-tui uses Textual for the workbench and argparse for the CLI.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        "README.md",
    ),
    (
        25,
        "The gno-tui test suite runs with pytest; UI tests use Textual's Pilot.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        25,
        "Snapshot tests in gno-tui use pytest-textual-snapshot; update them with "
        "--snapshot-update.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        24,
        "gno-tui formats with ruff format and lints with ruff check.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        24,
        "The gno-tui index is SQLite in WAL mode at <home>/index.sqlite.",
        ("project:gno-tui",),
        "memory",
        ALICE,
        "docs/architecture.md",
    ),
    (
        23,
        "Fact files in gno-tui are Markdown with YAML front matter, one file per fact.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        "docs/architecture.md",
    ),
    (
        23,
        "The engine package must never import textual or rich.",
        ("project:gno-tui",),
        "memory",
        ALICE,
        "docs/architecture.md",
    ),
    (
        22,
        "The infra on-call rotation changes every Monday at 10:00 Paris time.",
        ("team:infra",),
        "team",
        CURSOR,
        "wiki/on-call",
    ),
    (
        22,
        "Production deploys go through Argo CD; never kubectl apply by hand.",
        ("team:infra",),
        "team",
        ALICE,
        "wiki/deploys",
    ),
    (
        21,
        "The infra team's Grafana lives at grafana.internal, login via SSO.",
        ("team:infra",),
        "team",
        CURSOR,
        None,
    ),
    (
        21,
        "Terraform state for infra is in the S3 bucket tf-state-infra, locked by DynamoDB.",
        ("team:infra",),
        "team",
        CLAUDE,
        None,
    ),
    (
        20,
        "Backups of the production database run nightly at 02:00 UTC.",
        ("team:infra",),
        "team",
        CURSOR,
        "runbook/backups",
    ),
    (
        20,
        "Backups of the production database run every night at 02:00 UTC.",
        ("team:infra",),
        "team",
        CLAUDE,
        "chat 2026-11-10",
    ),
    (
        19,
        "The billing API is a FastAPI service deployed on Kubernetes.",
        ("project:billing-api",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        19,
        "Billing API money amounts are integers in cents, never floats.",
        ("project:billing-api",),
        "memory",
        ALICE,
        None,
    ),
    (
        18,
        "Stripe webhooks for the billing API must be idempotent on the event id.",
        ("project:billing-api",),
        "memory",
        CLAUDE,
        "incident 2026-10-28",
    ),
    (
        18,
        "Invoices are generated on the first day of each month at 06:00 UTC.",
        ("project:billing-api",),
        "memory",
        CURSOR,
        None,
    ),
    (
        17,
        "The billing API's integration tests need docker compose up -d postgres first.",
        ("project:billing-api",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        16,
        "Bob owns the billing API and approves its schema migrations.",
        ("project:billing-api", "user:bob"),
        "memory",
        ALICE,
        None,
    ),
    (
        16,
        "Bob prefers to be reached on Slack rather than by email.",
        ("user:bob",),
        "memory",
        CLAUDE,
        None,
    ),
    (15, "Bob is on holiday from December 20 to January 5.", ("user:bob",), "memory", CURSOR, None),
    (
        14,
        "Alice prefers dark themes in every editor and in the terminal.",
        ("user:alice",),
        "memory",
        CURSOR,
        None,
    ),
    (
        12,
        "Alice drinks green tea in the morning and no coffee after 14:00.",
        ("user:alice",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        10,
        "Use uv to manage virtual environments in Alice's projects.",
        ("user:alice", "project:gno-tui"),
        "memory",
        CLAUDE,
        None,
    ),
    (
        8,
        "Run the gno-tui benchmarks with python benchmarks/recall_bench.py.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        None,
    ),
    (
        6,
        "gno-tui screenshots are generated by scripts/screenshots.py from a demo store.",
        ("project:gno-tui",),
        "memory",
        CLAUDE,
        None,
    ),
]

# Three chains: the versions of each, (days ago, text); the first is added, the rest supersede.
CHAINS: list[tuple[tuple[str, ...], str, str, list[tuple[float, str]]]] = [
    (
        ("team:infra",),
        "team",
        CURSOR,
        [
            (27, "The staging database is Postgres 15 on db-staging-1."),
            (13, "The staging database is Postgres 16 on db-staging-2."),
        ],
    ),
    (
        ("user:alice",),
        "memory",
        CLAUDE,
        [
            (28, "Alice indents with tabs, 4 wide."),
            (11, "Alice indents with spaces, 4 per level, except in Makefiles."),
        ],
    ),
    (
        ("project:gno-tui",),
        "memory",
        ALICE,
        [
            (26, "gno-tui releases every two weeks on Friday."),
            (9, "gno-tui releases every Monday from the main branch once CI is green."),
            (
                4,
                "gno-tui releases every Monday from the main branch once CI and the snapshot "
                "tests are green.",
            ),
        ],
    ),
]
# Appended to the first chain after the receipts, so that one receipt has drifted.
LATE_VERSION = (
    1,
    "The staging database is Postgres 16 on db-staging-2, behind pgbouncer on port 6432.",
)

RETIRED = [
    ("Alice's laptop is a 2019 MacBook Pro.", "She switched to a Framework laptop."),
    ("The billing API still runs on Heroku.", "Migrated to Kubernetes in October."),
    ("Deploy freezes are announced in #general.", "Wrong channel: it is #infra-announce."),
]
# Agent-written facts a person has since vouched for.
CONFIRMED = [
    "Stripe webhooks for the billing API must be idempotent on the event id.",
    "The infra on-call rotation changes every Monday at 10:00 Paris time.",
]

PROPOSALS: list[tuple[str, tuple[str, ...], str, str]] = [
    (
        "Alice prefers dark themes in all her editors and terminals.",
        ("user:alice",),
        CLAUDE,
        "claude-7f3a",
    ),
    (
        "The billing API rounds invoice totals half-even, to the cent.",
        ("project:billing-api",),
        CLAUDE,
        "claude-7f3a",
    ),
    (
        "Staging deploys happen automatically on every merge to main.",
        ("team:infra",),
        CURSOR,
        "cursor-41",
    ),
    (
        "gno-tui's CI runs on GitHub Actions with Python 3.11 and 3.12.",
        ("project:gno-tui",),
        CLAUDE,
        "claude-9c20",
    ),
]

RECALLS: list[tuple[str, tuple[str, ...], str, str]] = [
    ("staging database postgres", ("team:infra",), CLAUDE, "claude-7f3a"),
    ("how does alice like her editor", ("user:alice",), ALICE, "shell-2211"),
    ("billing api invoices money", ("project:billing-api",), CURSOR, "cursor-41"),
]
