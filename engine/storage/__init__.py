"""Where facts live: the SQLModel tables, database engines, GNO fact files, the write lock and
collections, reindex and bulk writes."""
