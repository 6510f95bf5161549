"""monitoring pattern: construct and stack."""
