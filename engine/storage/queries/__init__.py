"""The SQL the domain modules run (engine/memory, engine/curation, engine/keyed,
engine/interop, engine/access), one module per domain: query helpers that take the session
explicitly, as the engine opens it (`MemoryEngine.session()`, or `write_session()` under the
write lock). The statements are the same on both stores (SQLAlchemy speaks SQLite and
PostgreSQL alike); what differs between the stores is engine/storage/mode.py's. Domain modules
import neither SQLAlchemy nor SQLModel (tests/test_architecture.py)."""
