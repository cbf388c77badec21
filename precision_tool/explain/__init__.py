"""``why``: the cause of the error an op introduces, with evidence, and a float64 replay.

* :mod:`.criterion` -- when a difference is rounding, and when it diverges;
* :mod:`.rounding` -- the noise model fed with what ``why`` measures itself;
* :mod:`.causes`, :mod:`.permutation` -- one function per hypothesis, and the ranking;
* :mod:`.diagnosis` -- :func:`~.diagnosis.explain_ref` (one op) and
  :func:`~.diagnosis.explain_newest` (the first introducers of the newest result);
* :mod:`.report` -- explanations as JSON-ready data.

What it reads and replays is the verdict's too, so it lives in ``compare/``: the streamed pass
over a tensor and its golden (:mod:`~precision_tool.compare.pair_stats`), the op's dump and
goldens (:mod:`~precision_tool.compare.op_tensors`, the only module that reads data) and the
float64 replay (:mod:`~precision_tool.compare.replay`).

Pure: nothing here prints; ``commands/why.py`` and ``render/why.py`` show the results.
"""
