"""The index's schema migrations (Alembic), shipped inside the package.

engine/storage/schema/version.py runs them programmatically on the engine's own connection: no
alembic.ini, nothing from the network. `env.py` is what Alembic runs; `versions/` holds one
script per revision, each freezing the schema it creates (never importing engine/storage/tables
.py, which describes only the newest schema). `legacy.py` brings an index made by a gno-tui
from before Alembic up to the baseline. See docs/decisions.md, "Schema migrations"."""
