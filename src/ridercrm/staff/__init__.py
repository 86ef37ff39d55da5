"""Staff users of the console: accounts, roles, passwords and sessions (docs/decisions.md, "Staff console")."""
