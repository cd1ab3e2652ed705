"""Writer tests: make the helper modules beside this file importable."""

from __future__ import annotations

import sys
from pathlib import Path

_here = str(Path(__file__).parent)
if _here not in sys.path:
    sys.path.insert(0, _here)
