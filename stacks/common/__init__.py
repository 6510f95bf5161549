"""Building blocks shared by every pattern construct."""
