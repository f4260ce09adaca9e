"""Word-level QE data: tags, the TER alignment to a post-edit, tags derived from it, the readers."""
