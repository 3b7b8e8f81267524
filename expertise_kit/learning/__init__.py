"""From session transcripts to learned entries: readers, extraction, secret scrubbing, the quality gate
and routing to domains."""
