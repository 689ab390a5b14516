"""The workbench's theme, set in code so that pictures and snapshots never depend on the
environment ($TEXTUAL_THEME)."""

from textual.theme import Theme

WORKBENCH_THEME = Theme(
    name="gno-workbench",
    primary="#5FA8D3",
    secondary="#8FBC8F",
    accent="#E0A458",
    warning="#E0A458",
    error="#E06C75",
    success="#98C379",
    foreground="#D8DEE9",
    background="#1B1F27",
    surface="#232833",
    panel="#2C3240",
    dark=True,
)
