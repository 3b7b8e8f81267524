"""From session transcripts to learned entries: readers, extraction (failures and their fixes, the user's
rules in ``rules.py``, key files), secret scrubbing, the quality gate and routing to domains."""
