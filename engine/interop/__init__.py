"""Moving memory in and out: import of JSONL, OB1, GNO folders and mem0; export; the OB1 shapes."""
