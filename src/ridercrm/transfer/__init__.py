"""Moving records in and out: CSV import and export (docs/decisions.md, "CLI")."""
