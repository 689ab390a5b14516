"""Ranking: the lexical leg (BM25, rapidfuzz), the static embedding model, word alignment, dedup
matching and the in-memory index."""
