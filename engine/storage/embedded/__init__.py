"""The embedded mode: fact files canonical, a SQLite index beside them, the home's lock."""
