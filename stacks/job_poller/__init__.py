"""job poller pattern: construct and stack."""
