"""Vector search and index building over a dataset version: flat k-nearest-neighbour search,
search through IVF indices (read by :mod:`..indices.vector`), merging covered and uncovered
fragments, and building indices in the reference's format."""
