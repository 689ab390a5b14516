"""gno-tui: a terminal workbench for an AI agent's memory."""

__version__ = "0.1.0"
