"""Events: changes published as signed webhooks from a transactional outbox (DESIGN §15)."""
