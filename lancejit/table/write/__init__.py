"""Changing a dataset: new data files, write_dataset (create, append, overwrite), delete/update,
merge_insert, schema evolution, compaction, restore/tags/cleanup.
"""
