"""Dataset indices: readers and writers of the reference's index formats."""
