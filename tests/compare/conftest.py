"""The kernel backends: tests that take ``kernel_backend`` run once with numpy, once with numba."""

from __future__ import annotations

import pytest

from precision_tool.compare import kernels


@pytest.fixture(params=["numpy", "numba"])
def kernel_backend(request, monkeypatch):
    """Force every Accumulator onto one backend, whatever the tensor size; yields its name.

    numba is an optional dependency (``pip install precision-tool[fast]``); CI installs it, so
    there the numba half always runs.
    """
    if request.param == "numba":
        pytest.importorskip("numba", reason="numba is not installed (pip install precision-tool[fast])")
        compiled = kernels.numba_kernels()
        assert compiled is not None, "numba is installed but its kernels did not load"
    else:
        compiled = None
    monkeypatch.setattr(kernels, "numba_for", lambda size, wanted=None: compiled)
    return request.param
