"""Model Explorer for the tests: imported when installed (the ``explorer`` extra), skipped
otherwise -- except in CI, which installs it (``.ci/run``), where its absence fails."""

from __future__ import annotations

import os

import pytest


def require_explorer():
    """The ``model_explorer`` package, or skip (fail under CI) when it is not installed."""
    try:
        import model_explorer
    except ImportError:
        message = 'ai-edge-model-explorer is not installed: pip install "precision-tool[explorer]"'
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return model_explorer


def extension_manager():
    """Model Explorer's own extension manager with this project's extension loaded."""
    require_explorer()
    from model_explorer.extension_manager import ExtensionManager

    manager = ExtensionManager(["precision_tool.model_explorer"])  # a singleton: first args stick
    manager.custom_extension_modules = ["precision_tool.model_explorer.main"]
    manager.load_extensions()
    return manager


def convert(path) -> dict:
    """The adapter's answer for ``path``, through ``ExtensionManager.run_cmd`` as the server
    calls it (``convert_adapter_response`` applied: plain dicts)."""
    from precision_tool.model_explorer.main import ADAPTER_ID

    return extension_manager().run_cmd({"extensionId": ADAPTER_ID, "cmdId": "convert",
                                        "modelPath": str(path), "settings": {},
                                        "deleteAfterConversion": False})
