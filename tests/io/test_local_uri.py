"""``file://`` URIs of local paths (``io/local._absolute_uri``): plain normalized absolute paths
skip ``abspath`` and ``quote``; every path gets the URI ``quote(abspath(path))`` gives."""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest

from lancejit.io.local import LocalStore, _absolute_uri

PATHS = ["/a/b/c.lance", "/data/0000-abc_x.lance", "/a/./b", "/a/../b", "/a/b/.", "/a/b/..", "/a b/c", "/a/%41/c",
         "/x/y..z/w", "/a//b", "/.hidden/f", "/", "/a/b/", "/é/ü", "/a/b~c-d.e", "/a/?b#c"]


@pytest.mark.parametrize("path", PATHS)
def test_uri_equals_quoted_abspath(path):
    _absolute_uri.cache_clear()
    assert _absolute_uri(path) == "file://" + quote(os.path.abspath(path))
    assert LocalStore().uri(path) == "file://" + quote(os.path.abspath(path))
