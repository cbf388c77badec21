"""The names of the plain host layouts, apart from the converters (which need numpy), so that
command-line help can list them without loading numpy."""

# Plain layouts are words over the dim letters, so converting is a transpose by letter.
PLAIN_LAYOUTS = frozenset({"NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "DHWNC", "NC", "CN"})
