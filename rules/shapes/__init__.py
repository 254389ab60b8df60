"""shapes rules."""
