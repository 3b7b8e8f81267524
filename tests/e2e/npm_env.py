"""Where the end-to-end tests keep the agents' CLIs, and how long they wait for them: one place for all."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REAL_HOME", "CACHE", "NPM_TIMEOUT", "SESSION_TIMEOUT"]

# Read now, at import: the suite's autouse fixture points HOME at a temp dir for every test, and npm
# needs the real one (its config says which registry to use).
REAL_HOME = os.environ.get("HOME", str(Path.home()))
CACHE = Path(os.environ.get("EXPERTISE_E2E_CACHE") or Path(REAL_HOME, ".cache", "expertise-e2e")) / "npm"
NPM_TIMEOUT = 900
SESSION_TIMEOUT = 300
