"""Where the data files live by default."""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
"""``<repo>/data``, resolved from the package location (never from the cwd)."""
