"""The sample network shipped in ``precision_data/``: a small residual CNN with one defect.

``python -m precision_tool.sample [DIR]`` writes it (default ``precision_data``).
"""

from .build import write_sample

__all__ = ["write_sample"]
