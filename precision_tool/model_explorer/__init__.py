"""Google's Model Explorer for GE graphs: an adapter extension and the per-op node data.

- ``model-explorer ge_proto_00000001_Build.txt --extensions=precision_tool.model_explorer``
  loads :mod:`.main` (Model Explorer imports ``<extension>.main``), whose adapter shows a GE
  graph dump: ops as nodes, namespaces from the ``/`` in op names, edges from the inputs, the
  tensor descriptors and attributes as node info (:mod:`.convert`).
- the node data are one JSON per metric and the verdict (:mod:`.node_data`), keyed by the
  adapter's node ids (:mod:`.ids`).
- ``explore`` and ``report --model-explorer`` write that node data and ``explore.json``
  (:mod:`.prepare`, :mod:`.launch`: one preparation for both); ``explore`` starts :mod:`.serve`,
  which opens Model Explorer at the first op that introduces the error; compiler-inserted ops
  sit in the layer of the op they serve (:mod:`.namespaces`).

Only :mod:`.main`, :mod:`.convert` and :mod:`.serve` import ``model_explorer`` (the optional ``explorer``
extra: ``pip install "precision-tool[explorer]"``); writing node data needs nothing extra.
"""
