"""Each screen's commands (key bindings that are also command-palette entries), one module
per screen, so a screen module holds its behaviour and this folder its key map."""
