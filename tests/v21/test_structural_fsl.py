"""Structural fixed-size lists (FSL of structs, 2.2): levels repeated per item."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from v21support import check_file, write_lance




@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("n,page", [(40, None), (3000, 8192)])
def test_fsl_of_struct(tmp_path, seed, n, page):
    rng = np.random.default_rng(seed)
    S = {"x": D.ints(rng, 3 * n, pa.int32()), "y": D.strings(rng, 3 * n)}
    items = D.structs(rng, 3 * n, S)
    fsl = pa.FixedSizeListArray.from_arrays(items, 3, mask=pa.array(D._mask(rng, n, 0.2)))
    # (pylance cannot read a struct mixing an FSL-of-struct child with a plain child)
    sf = pa.StructArray.from_arrays([fsl], names=["f"], mask=pa.array(D._mask(rng, n, 0.1)))
    # pylance reads such columns only alone ("columns of differing lengths"): one file each
    for name, arr in [("fsl", fsl), ("sf", sf)]:
        t = pa.table({name: arr})
        path = write_lance(tmp_path / f"{name}.lance", t, "2.2", page)
        check_file(path, rng, n_takes=3)
