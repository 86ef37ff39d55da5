"""Staff users of the console: accounts, roles, passwords and sessions (DESIGN §13)."""
