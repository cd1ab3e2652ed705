"""Reading a version: data files, fragments, scans (planned as arrays, late materialization, many small
fragments at once, page pruning) and takes (by offset, by row id, batched across callers).
"""
