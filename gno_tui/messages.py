"""Messages shared across the workbench (dataclass messages): what the store watcher posts to
screens, and what screens and widgets post up to the app (navigation, failed workers).

A screen's own messages (a worker's result for that screen) live beside the screen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerState


@dataclass
class StoreChanged(Message):
    """Another process (or this one) wrote to the store: refresh what is shown."""

    generation: int


@dataclass
class OpenChain(Message):
    """Show the supersession chain of a fact (#docid, record id or uri); the app handles it."""

    ref: str


@dataclass
class OpenLibraryAsOf(Message):
    """Show the Library as the store was at `moment` (an ISO time as typed); the app handles it."""

    moment: str


@dataclass
class WorkerFailed(Message):
    """A worker raised. Worker state changes go only to the node that started the worker and
    never bubble; this message does, up to the app's one failure handler."""

    worker: Worker[Any]


def forward_failure(node: MessagePump, event: Worker.StateChanged) -> None:
    """From a node's `on_worker_state_changed`: pass a failure on as WorkerFailed."""
    if event.state == WorkerState.ERROR:
        node.post_message(WorkerFailed(event.worker))
