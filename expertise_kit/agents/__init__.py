"""The agents we hook into: their settings files, hook events and installers."""
