"""Events: changes published as signed webhooks from a transactional outbox (docs/decisions.md, "Events (webhooks)")."""
