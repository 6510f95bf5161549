"""Code shared by the app's Lambda functions, shipped as one layer (python/patterns_common)."""
