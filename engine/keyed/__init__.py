"""The keyed memory API (instantKV-style keys, revisions, TTL, byte-bounded cursors) over the same
facts."""
