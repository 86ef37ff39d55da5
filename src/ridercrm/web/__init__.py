"""The web layer: what is served over HTTP beside the API (the staff console)."""
