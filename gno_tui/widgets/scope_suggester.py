"""Completion for a comma-separated list of scopes: the last item is completed from the scopes
the store already knows (textual's SuggestFromList completes the whole value only)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.suggester import Suggester


class ScopeSuggester(Suggester):
    def __init__(self, scopes: Iterable[str] = ()) -> None:
        super().__init__(use_cache=False, case_sensitive=False)
        self.scopes: list[str] = list(scopes)

    async def get_suggestion(self, value: str) -> str | None:
        head, comma, last = value.rpartition(",")
        stem = last.lstrip()
        if not stem:
            return None
        taken = {part.strip() for part in head.split(",")} if comma else set()
        for scope in self.scopes:
            if scope.startswith(stem) and scope != stem and scope not in taken:
                return value + scope[len(stem) :]
        return None


def split_scopes(value: str) -> list[str]:
    """The scopes typed into a comma-separated box, empty items dropped."""
    return [part.strip() for part in value.split(",") if part.strip()]
