"""Messages that workers and the store watcher post to screens (dataclass messages)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class StoreChanged(Message):
    """Another process (or this one) wrote to the store: refresh what is shown."""

    generation: int
