"""Names the sample's files share: the dump run directory and the GE sub-graph (model) name."""

RUN = "20261129120000"
MODEL = f"ge_default_{RUN}_1"
