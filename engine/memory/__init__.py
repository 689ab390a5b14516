"""The seed contract's verbs: remember (fence, exact check, candidates, write), recall (rank,
budget, receipt), receipts, and read-only browsing."""
