"""Real servers' documents from public projects' test suites (README.md: each file's source and licence)."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parent
CAPABILITIES = CORPUS / "capabilities"  # one GetCapabilities response per file, typed in README.md's table
RECORDS = CORPUS / "records"  # catalogue metadata
CITE = RECORDS / "cite"  # the 12 Dublin Core records of the OGC CITE test data
