"""A small modal that picks a collection's egress policy directly (no cycling through a
looser one to reach a tighter one); returns the policy chosen, or None."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from engine.facade import POLICIES
from screens.modal import Modal

WHAT_IT_ALLOWS = {
    "local_only": "facts stay on this machine",
    "lan": "facts may leave for the local network",
    "remote": "facts may leave for remote services",
}


class PolicyPicker(Modal[str | None]):
    STYLES = """
    PolicyPicker {
        #policy-box { width: 64; }
        #policy-options { height: auto; margin-top: 1; }
        #policy-keys { color: $text-muted; margin-top: 1; }
    }
    """
    BOX_ID = "policy-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Cancel", id="policy.cancel", tooltip="Keep the policy"),
    ]

    def __init__(self, collection: str, current: str) -> None:
        super().__init__()
        self.collection, self.current = collection, current

    def box_content(self) -> ComposeResult:
        yield Label(f"Egress policy of {self.collection} (now {self.current}):", markup=False)
        yield OptionList(
            *(Option(f"{policy:<11} {WHAT_IT_ALLOWS[policy]}", id=policy) for policy in POLICIES),
            id="policy-options",
        )
        yield Label(
            "enter chooses · tighter applies at once, looser asks y first · escape cancels",
            id="policy-keys",
        )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = POLICIES.index(self.current)
        options.focus()

    @on(OptionList.OptionSelected, "#policy-options")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
