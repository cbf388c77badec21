"""The call keys of msprobe's ``dump.json``: what one key says about the call it names.

msprobe (the dump tool of torch_npu and MindSpore) names every call it records with one key,
its fields joined by ``.``:

- an API: ``{prefix}.{api}.{count}.{forward|backward}``, e.g. ``Functional.linear.0.forward``,
  ``Tensor.__add__.3.backward``; the API name may hold dots itself
  (``Primitive.norm.RmsNorm.0.forward``, MindSpore's primitive then its class);
- a module (PyTorch ``Module``, MindSpore ``Cell``):
  ``{Module|Cell}.{module path}.{class}.{forward|backward}.{count}``, e.g.
  ``Module.layers.0.attn.Attention.forward.0``: direction and count are the other way round
  from an API's. The path is the module's name in ``named_modules()`` (dots inside), led by
  the model's index when a list of models was given (``Module.0.conv1.Conv2d.forward.0``);
- a module's parameter gradients: ``{Module|Cell}.{path}.{class}.parameters_grad.{count}``,
  the count being how often the gradient hook fired, not a call count; older msprobe wrote
  no count (``...Conv2d.parameters_grad``).

The prefixes are msprobe's (``Const.API_DATA_PREFIX``): PyTorch ``Functional Tensor Torch VF
NPU Aten Distributed MindSpeed``, MindSpore ``Functional Tensor Mint MintFunctional
MintDistributed Distributed Primitive Jit``; an unknown API type is written ``API``. Any
prefix is accepted here: the form of the tail decides what a key is.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dump_names import all_digits

FORWARD, BACKWARD, PARAMETERS_GRAD = "forward", "backward", "parameters_grad"
DIRECTIONS = (FORWARD, BACKWARD)
MODULE_PREFIXES = ("Module", "Cell")
API_PREFIXES = (
    "Functional",
    "Tensor",
    "Torch",
    "VF",
    "NPU",
    "Aten",
    "Distributed",
    "MindSpeed",
    "Triton",
    "Mint",
    "MintFunctional",
    "MintDistributed",
    "Primitive",
    "Jit",
    "API",
)
"""The API prefixes msprobe writes (for reference: :func:`parse_key` takes any)."""


@dataclass(frozen=True)
class CallKey:
    """One key of ``dump.json`` taken apart.

    ``direction`` is ``forward``, ``backward`` or ``parameters_grad``; None for a key outside
    msprobe's grammar (then ``name`` is the whole key after the prefix). ``name`` is the API
    name (``linear``, ``norm.RmsNorm``) or a module's class (``Conv2d``). ``index`` is the call
    count (None when the key has none). ``module_path`` is the module's path for module-form
    keys (``""`` for a root module), None for APIs.
    """

    text: str
    prefix: str
    name: str
    index: int | None
    direction: str | None
    module_path: str | None = None

    @property
    def is_module(self) -> bool:
        """Whether the key names a module (or its parameter gradients) rather than an API."""
        return self.module_path is not None

    @property
    def module_name(self) -> str | None:
        """``{prefix}.{path}.{class}``: the module, the same for all its calls; None for APIs."""
        if self.module_path is None:
            return None
        return ".".join((self.prefix, self.module_path, self.name))

    @property
    def api_name(self) -> str:
        """``{prefix}.{api}`` for an API (``Functional.linear``), else the module name."""
        return self.module_name or f"{self.prefix}.{self.name}"


def parse_key(text: str) -> CallKey:
    """Take the key ``text`` of one ``dump.json`` call apart (see the module's docstring).

    Never fails: a key outside the grammar comes back with ``direction`` None.
    """
    parts = text.split(".")
    prefix = parts[0]
    if len(parts) >= 3 and parts[-2] == PARAMETERS_GRAD and all_digits(parts[-1]):
        return _module_key(text, parts[:-2], int(parts[-1]), PARAMETERS_GRAD)
    if len(parts) >= 2 and parts[-1] == PARAMETERS_GRAD:
        return _module_key(text, parts[:-1], None, PARAMETERS_GRAD)
    if len(parts) >= 4 and parts[-2] in DIRECTIONS and all_digits(parts[-1]):
        return _module_key(text, parts[:-2], int(parts[-1]), parts[-2])
    if len(parts) >= 4 and parts[-1] in DIRECTIONS and all_digits(parts[-2]):
        return CallKey(text, prefix, ".".join(parts[1:-2]), int(parts[-2]), parts[-1])
    if len(parts) >= 3 and parts[-1] in DIRECTIONS:  # msprobe's own parser takes this form too
        return CallKey(text, prefix, ".".join(parts[1:-1]), None, parts[-1])
    return CallKey(text, prefix, ".".join(parts[1:]), None, None)


def _module_key(text: str, head: list[str], index: int | None, direction: str) -> CallKey:
    """``head`` is ``[prefix, *path, class]``."""
    if len(head) < 2:
        return CallKey(text, head[0], "", index, direction, "")
    return CallKey(text, head[0], head[-1], index, direction, ".".join(head[1:-1]))
