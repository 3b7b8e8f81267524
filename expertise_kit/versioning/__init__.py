"""Every revision as a git commit: git calls, busy states, commits and deferral, the log, entry-level
diffs, the entry merge and the merge driver's plan; the shared layer (``shared``), its ledger (``ledger``:
tombstones and origins), what leaves it (``lifecycle``), and the git side of ``sync`` (``sharesync``).
Below ``store/``: nothing here imports it (revert, blame, sync's writes and the driver's write are
operations above the store)."""
