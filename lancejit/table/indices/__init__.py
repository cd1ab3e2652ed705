"""The indices a dataset carries: reading (and building) the reference's index files.
"""
