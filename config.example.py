"""PrecisionTool settings. Copy this file to ``config.py`` in the directory you run the tool from
(the parent of your data root), or point ``--config PATH`` or ``PRECISION_TOOL_CONFIG`` at it.

Command-line flags beat environment variables, which beat this file, which beats the defaults
shown here. The file is read as plain ``NAME = value`` assignments of literals (strings, numbers,
booleans, lists, dicts); it is never executed.
"""

# Where the dumps live (see README, "Data layout"). Relative paths are taken from the directory
# this file is in.
DATA_ROOT_DIR = "precision_data"

# Where the tool writes (results, pt/dc exports, ni -s graphs, reports, the graph cache):
# None means temp/ under DATA_ROOT_DIR. Set it (or pass --out DIR) when the data root is
# read-only or shared. Relative paths are taken from the directory this file is in. The tool
# never writes through a symbolic link at or below this directory: it refuses with one line.
OUTPUT_ROOT = None

# Which training steps to compare: '0', '0|5|10', ranges '3-5', or '' for every step found.
TF_DUMP_STEP = "0"

# vcs / ac: an op's output is flagged when its cosine similarity (a number from -1 to 1) is at
# or below this...
COSINE_THRESHOLD = 0.98

# ... or its RelativeEuclideanDistance is at or above this (cosine cannot see a wrong scale),
# or it holds NaN/Inf. A number >= 0, or None: sqrt(2 * (1 - COSINE_THRESHOLD)), 0.2 at 0.98,
# the RED of an error that keeps the norm at that cosine, so only a norm that is off adds flags.
RED_THRESHOLD = None

# vcs / ac: how many flagged ops to list (a whole number >= 0; 0 lists all).
VCS_LIMIT = 3

# vc: worker processes for the comparison (0 to 1024); 0 means one per CPU core.
WORKERS = 0

# vc: a Dask cluster to compute on instead of this machine's worker processes: its scheduler's
# address ('tcp://HOST:8786'; the workers must see the dump files at the same paths and have
# precision-tool installed), or 'local:N' for a LocalCluster of N processes started for the run.
# '' (the default) uses WORKERS local processes. Needs pip install 'precision-tool[cluster]'.
SCHEDULER = ""

# vc: a tensor pair larger than this many bytes (both sides' files) is compared in ranges of
# about this size on several workers at once, so one huge tensor neither serialises the run nor
# needs its size in memory. 0 (the default) derives it: the run's data bytes / (2 x workers),
# within 64 MiB and 1 GiB.
SPLIT_BYTES = 0

# vc on a Dask cluster: seconds without any result before the run stops with one line (the run
# is marked interrupted, and vc --resume continues it). A call carries at most about 1 GiB, so
# five minutes of nothing is a lost or stuck cluster, not a slow one.
CLUSTER_TIMEOUT = 300

# ac cast check: a Cast from the left dtype to the right one is reported as dangerous. A list of
# (source, target) pairs of GE dtype names (DT_...).
# The default: every floating type to every integer type, and every narrowing integer cast.
DANGEROUS_CASTS = [
    ("DT_FLOAT", "DT_INT8"),
    ("DT_FLOAT", "DT_UINT8"),
    ("DT_FLOAT", "DT_INT16"),
    ("DT_FLOAT", "DT_UINT16"),
    ("DT_FLOAT", "DT_INT32"),
    ("DT_FLOAT", "DT_UINT32"),
    ("DT_FLOAT", "DT_INT64"),
    ("DT_FLOAT", "DT_UINT64"),
    ("DT_FLOAT16", "DT_INT8"),
    ("DT_FLOAT16", "DT_UINT8"),
    ("DT_FLOAT16", "DT_INT16"),
    ("DT_FLOAT16", "DT_UINT16"),
    ("DT_FLOAT16", "DT_INT32"),
    ("DT_FLOAT16", "DT_UINT32"),
    ("DT_FLOAT16", "DT_INT64"),
    ("DT_FLOAT16", "DT_UINT64"),
    ("DT_BF16", "DT_INT8"),
    ("DT_BF16", "DT_UINT8"),
    ("DT_BF16", "DT_INT16"),
    ("DT_BF16", "DT_UINT16"),
    ("DT_BF16", "DT_INT32"),
    ("DT_BF16", "DT_UINT32"),
    ("DT_BF16", "DT_INT64"),
    ("DT_BF16", "DT_UINT64"),
    ("DT_DOUBLE", "DT_INT8"),
    ("DT_DOUBLE", "DT_UINT8"),
    ("DT_DOUBLE", "DT_INT16"),
    ("DT_DOUBLE", "DT_UINT16"),
    ("DT_DOUBLE", "DT_INT32"),
    ("DT_DOUBLE", "DT_UINT32"),
    ("DT_DOUBLE", "DT_INT64"),
    ("DT_DOUBLE", "DT_UINT64"),
    ("DT_INT64", "DT_INT32"),
    ("DT_INT64", "DT_INT16"),
    ("DT_INT64", "DT_INT8"),
    ("DT_INT32", "DT_INT16"),
    ("DT_INT32", "DT_INT8"),
    ("DT_INT16", "DT_INT8"),
    ("DT_UINT64", "DT_UINT32"),
    ("DT_UINT32", "DT_UINT16"),
    ("DT_UINT16", "DT_UINT8"),
]

# Show tracebacks of internal errors (same as --debug): True or False.
DEBUG = False

# Accepted for compatibility with the original precision_tool's config; unused (no CANN needed).
CMD_ROOT_PATH = "/usr/local/"
