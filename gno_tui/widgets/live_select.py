"""A dropdown whose options follow the store (scopes, collections) without moving what a
person is choosing: options that arrive while it is open wait until it closes, and the value
stays on the same option (by value, not position) while that option is still offered."""

from __future__ import annotations

from collections.abc import Sequence

from textual.widgets import Select


class LiveSelect(Select[str]):
    def __init__(
        self,
        options: Sequence[tuple[str, str]] = (),
        *,
        prompt: str = "Select",
        allow_blank: bool = True,
        value: str | None = None,
        id: str | None = None,
    ) -> None:
        chosen = Select.NULL if value is None else value
        super().__init__(options, prompt=prompt, allow_blank=allow_blank, value=chosen, id=id)
        self.allows_blank = allow_blank
        self.offered: list[tuple[str, str]] = list(options)
        self.waiting: list[tuple[str, str]] | None = None  # arrived while open

    def offer(self, options: Sequence[tuple[str, str]]) -> None:
        """Show `options` now, or when the dropdown closes if it is open: rebuilding the list
        under an open dropdown resets its highlight, and enter would pick another option."""
        if self.expanded:
            self.waiting = list(options)
        else:
            self.apply(list(options))

    def watch_expanded(self, expanded: bool) -> None:
        # Runs after Select's own watcher, and after a pick has set the value.
        if not expanded and self.waiting is not None:
            options, self.waiting = self.waiting, None
            self.apply(options)

    def apply(self, options: list[tuple[str, str]]) -> None:
        if options == self.offered or (not options and not self.allows_blank):
            return  # nothing new (or nothing to offer: the value stays as it is)
        self.offered = options
        current = self.value
        # set_options resets the value (blank, or the first option): that reset is no change
        # of the person's choice, so it is not announced unless the value is gone.
        with self.prevent(Select.Changed):
            self.set_options(options)
            if any(value == current for _, value in options):
                self.value = current
        if self.is_blank() and options:
            self.value = options[0][1]  # a blank is no one's choice: the first option
        elif self.value != current:
            self.post_message(Select.Changed(self, self.value))
