"""ptxas rules."""
