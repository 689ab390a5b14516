from gno_tui.cli import entry_point

entry_point()
