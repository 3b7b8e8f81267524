"""Every revision as a git commit: git calls, busy states, commits and deferral, the log, entry-level
diffs, the entry merge and the merge driver's plan. Below ``store/``: nothing here imports it (revert,
blame and the driver's write are operations above the store)."""
