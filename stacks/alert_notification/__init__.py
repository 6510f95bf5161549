"""alert notification pattern: construct and stack."""
