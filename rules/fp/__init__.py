"""fp rules."""
