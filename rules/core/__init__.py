"""The linter's own notices (CL000-CL002), emitted by the engine."""
