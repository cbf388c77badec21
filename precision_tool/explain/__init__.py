"""``why``: the cause of the error an op introduces, with evidence, and a float64 replay.

* :mod:`.numbers` -- one streamed pass over an NPU tensor and its golden (:class:`PairStats`);
* :mod:`.criterion` -- when a difference is rounding, and when it diverges;
* :mod:`.causes`, :mod:`.permutation` -- one function per hypothesis, and the ranking;
* :mod:`.replay` -- the op recomputed from its own NPU inputs, one function per op type;
* :mod:`.tensors` -- the only module that reads data (the op's dump, its goldens, the result);
* :mod:`.diagnosis` -- :func:`~.diagnosis.explain_ref` (one op) and
  :func:`~.diagnosis.explain_newest` (the first introducers of the newest result);
* :mod:`.report` -- explanations as JSON-ready data.

Pure: nothing here prints; ``commands/why.py`` and ``render/why.py`` show the results.
"""
