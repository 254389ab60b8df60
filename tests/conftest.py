import sys
from pathlib import Path

# tests import their shared helpers (fixture_support) by name
sys.path.insert(0, str(Path(__file__).resolve().parent))
