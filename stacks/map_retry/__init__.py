"""map retry pattern: construct and stack."""
