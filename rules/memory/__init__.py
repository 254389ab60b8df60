"""memory rules."""
