"""The one typed entry point every surface (CLI, MCP, workbench) uses."""
