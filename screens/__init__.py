"""The workbench's screens, one per module, each with its CSS nested under the screen's type."""
