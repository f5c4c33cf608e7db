"""Where the launcher tests' local output lives (fixtures/README.md says how each was made)."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
