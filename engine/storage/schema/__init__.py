"""The index's schema: its SQLModel tables, the database engines and the migrations."""
