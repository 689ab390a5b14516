"""Widgets shared by several screens (widgets only: their renderings are in gno_tui.render)."""
