"""Every revision as a git commit: git calls, busy states, commits and deferral, the log, entry-level
diffs, revert and blame."""
