"""sync rules."""
