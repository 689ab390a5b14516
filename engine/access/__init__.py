"""Who may reach the store over the network, and writes done at most once.

- tokens.py: the bearer tokens of `gno-tui serve`, each a principal with grants (scopes,
  keyed namespaces, write, curate), kept as SHA-256 digests in the store's database so that
  every server process on the store sees a new or revoked token at its next request.
- write_requests.py: a write sent with a `requestId` is applied at most once per caller; the
  same id again answers the first result, the same id with another request is a conflict."""
