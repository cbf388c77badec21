"""How PyTorch and MindSpore spell the msprobe sample's network (:mod:`.msprobe`): API prefixes
and names, module classes, the dtypes of the NPU run, and the stack frames (the user's model
file, the library and the framework's own machinery) that msprobe's ``stack.json`` records for
each call.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..formats.msprobe_write import frame

# The user's model file; (line, code) of each call, the same file for both frameworks with the
# framework's spelling filled in.
_LINES = {
    "attn.qkv": (32, "qkv = self.qkv(x)"),
    "attn.reshape": (33, "qkv = qkv.reshape(b, s, 3, self.heads, self.head_dim)"),
    "attn.split": (34, "q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)"),
    "attn.scores": (35, "scores = {matmul}(q, k.{transpose}(-2, -1)) * self.scale"),
    "attn.softmax": (36, "probs = {softmax}(scores, dim=-1)"),
    "attn.context": (37, "out = {matmul}(probs, v).{transpose}(1, 2).reshape(b, s, -1)"),
    "attn.proj": (38, "return self.proj(out)"),
    "rms.variance": (46, "variance = x.pow(2).mean(-1, keepdim=True)"),
    "rms.normed": (47, "x = x * {rsqrt}(variance + self.eps)"),
    "rms.scale": (48, "return self.weight * x"),
    "mlp": (56, "return self.down({gelu}(self.up(x)))"),
    "block.attn": (66, "x = x + self.attn(self.attn_norm(x))"),
    "block.mlp": (67, "return x + self.mlp(self.mlp_norm(x))"),
    "model.embed": (81, "x = self.embed(ids)"),
    "model.layer": (83, "x = layer(x)"),
    "model.head": (84, "return self.head(self.norm(x))"),
}


@dataclass(frozen=True)
class Flavour:
    """How one framework spells the network: API prefixes and names, classes, files, dtypes."""

    framework: str
    module_prefix: str
    npu_dtype: np.dtype
    ids_dtype: np.dtype
    ops: dict  # logical op -> (prefix, name)
    words: dict  # the spellings _LINES are formatted with
    library: dict  # logical op -> the framework's frame that calls it (inside a library module)
    machinery: tuple  # frames the framework adds per module call
    root: tuple  # the training script's frames
    model_file: str
    method: str  # "forward" or "construct"
    embedding_args: tuple  # the library embedding's arguments after input and weight

    def site(self, name: str) -> str:
        line, code = _LINES[name]
        return frame(self.model_file, line, self.method, code.format(**self.words))


_SITE = "/usr/local/python3.10/lib/python3.10/site-packages"
_USER = "/home/user/llm"


def _pytorch() -> Flavour:
    torch = f"{_SITE}/torch"
    ops = {
        "embedding": ("Functional", "embedding"),
        "layer_norm": ("Functional", "layer_norm"),
        "linear": ("Functional", "linear"),
        "reshape": ("Tensor", "reshape"),
        "permute": ("Tensor", "permute"),
        "unbind": ("Tensor", "unbind"),
        "transpose": ("Tensor", "transpose"),
        "matmul": ("Torch", "matmul"),
        "mul": ("Tensor", "__mul__"),
        "softmax": ("Functional", "softmax"),
        "add": ("Tensor", "__add__"),
        "pow": ("Tensor", "pow"),
        "mean": ("Tensor", "mean"),
        "rsqrt": ("Torch", "rsqrt"),
        "gelu": ("Functional", "gelu"),
    }
    library = {
        "linear": frame(
            f"{torch}/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)"
        ),
        "layer_norm": frame(f"{torch}/nn/modules/normalization.py", 217, "forward", "return F.layer_norm("),
        "embedding": frame(f"{torch}/nn/modules/sparse.py", 190, "forward", "return F.embedding("),
    }
    machinery = (
        frame(f"{torch}/nn/modules/module.py", 1762, "_call_impl", "return forward_call(*args, **kwargs)"),
        frame(f"{torch}/nn/modules/module.py", 1751, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
    )
    root = (
        *machinery,
        frame(f"{_USER}/train.py", 52, "train_step", "logits = model(input_ids)"),
        frame(f"{_USER}/train.py", 88, "<module>", "loss = train_step(model, batch)"),
    )
    words = {
        "matmul": "torch.matmul",
        "transpose": "transpose",
        "softmax": "F.softmax",
        "rsqrt": "torch.rsqrt",
        "gelu": "F.gelu",
    }
    return Flavour(
        "pytorch",
        "Module",
        np.dtype(ml_dtypes.bfloat16),
        np.dtype(np.int64),
        ops,
        words,
        library,
        machinery,
        root,
        f"{_USER}/model.py",
        "forward",
        (None, None, 2.0, False, False),
    )


def _mindspore() -> Flavour:
    mint = f"{_SITE}/mindspore/mint/nn/layer"
    ops = {
        "embedding": ("MintFunctional", "embedding"),
        "layer_norm": ("MintFunctional", "layer_norm"),
        "linear": ("MintFunctional", "linear"),
        "reshape": ("Tensor", "reshape"),
        "permute": ("Tensor", "permute"),
        "unbind": ("Tensor", "unbind"),
        "transpose": ("Tensor", "swapaxes"),
        "matmul": ("Mint", "matmul"),
        "mul": ("Tensor", "__mul__"),
        "softmax": ("MintFunctional", "softmax"),
        "add": ("Tensor", "__add__"),
        "pow": ("Tensor", "pow"),
        "mean": ("Tensor", "mean"),
        "rsqrt": ("Mint", "rsqrt"),
        "gelu": ("MintFunctional", "gelu"),
    }
    library = {
        "linear": frame(f"{mint}/basic.py", 148, "construct", "return F.linear(input, self.weight, self.bias)"),
        "layer_norm": frame(
            f"{mint}/normalization.py",
            104,
            "construct",
            "return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)",
        ),
        "embedding": frame(
            f"{mint}/embedding.py",
            131,
            "construct",
            "return F.embedding(input, self.weight, self.padding_idx, self.max_norm,",
        ),
    }
    cell = f"{_SITE}/mindspore/nn/cell.py"
    machinery = (
        frame(cell, 1356, "_run_construct", "output = self._run_forward_hook(inputs, output)"),
        frame(cell, 734, "__call__", "return self._run_construct(*args, **kwargs)"),
    )
    root = (
        *machinery,
        frame(f"{_USER}/train.py", 47, "forward_fn", "logits = model(input_ids)"),
        frame(f"{_USER}/train.py", 90, "<module>", "loss = train_step(batch)"),
    )
    words = {
        "matmul": "mint.matmul",
        "transpose": "swapaxes",
        "softmax": "mint.nn.functional.softmax",
        "rsqrt": "mint.rsqrt",
        "gelu": "mint.nn.functional.gelu",
    }
    return Flavour(
        "mindspore",
        "Cell",
        np.dtype(np.float16),
        np.dtype(np.int32),
        ops,
        words,
        library,
        machinery,
        root,
        f"{_USER}/model.py",
        "construct",
        (None, None, 2.0, False),
    )


FLAVOURS = {"pytorch": _pytorch, "mindspore": _mindspore}


__all__ = ["FLAVOURS", "Flavour"]
