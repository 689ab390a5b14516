"""A person's decisions: the review queue, retire/restore/confirm, duplicates, merge, undo/redo
over the decision log, threshold calibration, recall labels."""
