"""Reports for the staff console: the dashboard's statistics and its charts."""
