"""A field for a whole-number budget (Recall's max tokens): it keeps what was typed, and a
value the engine would refuse is refused in place: the field turns red and says what it
takes, instead of a default standing in for it unseen."""

from __future__ import annotations

import re

from textual.validation import ValidationResult, Validator
from textual.widgets import Input


class WholeNumber(Validator):
    """1 to `limit`, in ASCII digits: what the engine's budget check takes."""

    def __init__(self, limit: int) -> None:
        super().__init__(failure_description=f"1 to {limit}")
        self.limit = limit

    def validate(self, value: str) -> ValidationResult:
        text = value.strip()
        if re.fullmatch(r"\+?[0-9]+", text) and 1 <= int(text) <= self.limit:
            return self.success()
        return self.failure()


class BudgetInput(Input):
    def __init__(self, value: str, limit: int, *, placeholder: str, id: str) -> None:
        # No type="integer": it drops the keys it does not take, so "abc" typed into "512"
        # left 512 standing, as if it had been accepted.
        super().__init__(
            value,
            placeholder=placeholder,
            id=id,
            validators=[WholeNumber(limit)],
            validate_on=["changed", "submitted"],
        )
        self.tooltip = f"A whole number from 1 to {limit}."

    def validate(self, value: str) -> ValidationResult | None:
        result = super().validate(value)
        refused = result is not None and not result.is_valid
        # The border says what the field takes while its value is refused (the field is too
        # narrow for a sentence; the tooltip has one).
        self.border_subtitle = self.validators[0].failure_description if refused else ""
        return result

    def accepted(self) -> str | None:
        """The value, or None (said in the field, which gets the focus) when it is refused."""
        result = self.validate(self.value)
        if result is not None and not result.is_valid:
            self.focus()
            return None
        return self.value.strip()
