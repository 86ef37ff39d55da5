"""Moving records in and out: CSV import and export (DESIGN §12)."""
