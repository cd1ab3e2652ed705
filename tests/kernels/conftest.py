"""Makes the shared kernel-test references (``fsst_ref``) importable from the test modules."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
