"""The memory contract every surface shares: error codes, identity and normalisation rules, and the
JSON Schemas results are validated against."""
