"""Every revision as a git commit: git calls, busy states, commits and deferral, the log, entry-level
diffs, revert and blame; the shared layer (``shared``), its ledger (``ledger``: tombstones and origins),
what leaves it (``lifecycle``), and the git side of ``sync`` (``sharesync``)."""
