"""Planning, pairing, metrics, the streaming comparison engine and the result CSV.

The package is also the public entry point ``precision_tool.compare(data_root, ...)``: calling it
runs :func:`precision_tool.compare.api.compare`. A module cannot be called, so the package's
module object gets a subclass of ModuleType with ``__call__`` (a documented Python feature:
assigning ``__class__`` of a module); this keeps ``precision_tool.compare.metrics`` and friends
importable under the same name as the function the API promises.
"""

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        """Compare a data root; see :func:`precision_tool.compare.api.compare`."""
        from .api import compare

        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
