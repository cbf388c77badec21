"""Exit statuses of the one-shot command line."""

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0  # ran, nothing suspicious
    FLAGGED = 1  # ran, and found suspicious operators (vcs / ac)
    ERROR = 2  # usage or input error
    INTERRUPTED = 130  # Ctrl-C
