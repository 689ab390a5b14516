"""Rich renderings of what the engine returns: functions from façade types (and the seed
results' dicts) to rich Text, tables and cells. No Textual, no store access: the screens load
through the façade, then hand the data here to be shown."""
