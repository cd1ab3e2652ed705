"""What a version of a dataset is: manifests, versions and tags, fragments, deletion files, row ids, the
version's index as arrays, and the context every reader and writer of one version shares.
"""
