"""Course sessions: scheduled runs of a product at a site, their seats and waiting lists."""
