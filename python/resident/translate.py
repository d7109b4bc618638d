"""Translate a PyTorch CNN into resident's preemptible layer plan.

`translate(model, input_shape)` traces an eval-mode model with torch.fx, runs shape propagation,
and rewrites the graph into a flat list of layers that resident's preemptible kernel library
runs as best-effort work:

    conv2d          strided, padded, grouped (depthwise included) 2-D convolution with a bias;
                    a batch norm that follows it is folded into its weights and bias
    scale_shift     a per-channel affine that could not be folded (a batch norm that does not
                    follow a convolution, as in DenseNet's pre-activation layers)
    act             an activation on its own (most are fused into the layer before them)
    max_pool, avg_pool, global_avg_pool
    add             a residual sum of two tensors of one shape
    concat          channel concatenation (NCHW, dim 1)
    channel_scale   x * s with s one value per channel (squeeze-excitation)
    linear          y = x W^T + b

Activations (relu, relu6, silu, sigmoid, hardswish, hardsigmoid) fuse into the conv2d, linear,
add or scale_shift before them when that layer's output has no other user. Dropout, identity
and stochastic depth are what they are at inference: nothing. Flatten is a new shape over the
same memory. A layer the translator does not know is refused by name (`Unsupported`).

`Plan.reference(x)` evaluates the plan with PyTorch's CPU operators: the translation's meaning,
checked against the model itself by the tests; the GPU kernels are checked against it.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp

__all__ = ["Unsupported", "Layer", "Plan", "translate", "activations", "layer_kinds"]

activations = ("none", "relu", "relu6", "silu", "sigmoid", "hardswish", "hardsigmoid")
layer_kinds = ("conv2d", "scale_shift", "act", "max_pool", "avg_pool", "global_avg_pool", "add",
               "concat", "channel_scale", "linear")


class Unsupported(ValueError):
    """A layer, or a setting of a layer, that the preemptible kernel library does not run."""


@dataclass
class Layer:
    """One layer of a plan. `inputs` and `output` are tensor ids (0 is the model's input);
    `shape` is the output's shape; `params` its settings; `weights` its tensors (fp32, CPU)."""

    kind: str
    name: str
    inputs: list[int]
    output: int
    shape: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, torch.Tensor] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "inputs": list(self.inputs),
                "output": self.output, "shape": list(self.shape), **self.params}


@dataclass
class Plan:
    """The translated model: its input shape, its layers in execution order, and which tensor
    is the output (with its shape, which a flatten may have changed)."""

    input_shape: tuple[int, ...]
    layers: list[Layer]
    output: int
    output_shape: tuple[int, ...]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for layer in self.layers:
            out[layer.kind] = out.get(layer.kind, 0) + 1
        return out

    def parameters(self) -> int:
        return sum(int(w.numel()) for layer in self.layers for w in layer.weights.values())

    def describe(self) -> dict[str, Any]:
        return {"input_shape": list(self.input_shape), "output": self.output,
                "output_shape": list(self.output_shape), "counts": self.counts(),
                "parameters": self.parameters(), "layers": [l.describe() for l in self.layers]}

    def to_resident(self):
        """The plan in device memory as resident's preemptible kernel calls
        (resident._resident.TranslatedModel; needs a GPU). Its `calls` feed a best-effort
        runner; `infer(x)` runs one unpreempted inference (see `infer`)."""
        from . import _resident  # noqa: PLC0415 (the translator itself needs no native module)

        layers = []
        for layer in self.layers:
            d: dict[str, Any] = {"kind": layer.kind, "name": layer.name,
                                 "inputs": list(layer.inputs), "output": layer.output,
                                 "shape": list(layer.shape)}
            for key in ("kernel", "stride", "padding", "groups", "act", "count_include_pad"):
                if key in layer.params:
                    d[key] = layer.params[key]
            for key, w in layer.weights.items():
                d[key] = w.detach().to("cpu", torch.float32).contiguous().numpy()
            layers.append(d)
        return _resident.TranslatedModel(list(self.input_shape), layers, self.output)

    def infer(self, model: Any, x: torch.Tensor) -> torch.Tensor:
        """One unpreempted inference of `x` on `model` (from to_resident()), as a CPU tensor of
        the plan's output shape."""
        data = x.detach().to("cpu", torch.float32).contiguous().numpy()
        out = torch.frombuffer(bytearray(model.infer(data)), dtype=torch.float32)
        return out.reshape(self.output_shape)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The plan evaluated with PyTorch's operators (on x's device and dtype)."""
        if tuple(x.shape) != tuple(self.input_shape):
            raise ValueError(f"the plan was translated for input {list(self.input_shape)}, "
                             f"not {list(x.shape)}")
        values: dict[int, torch.Tensor] = {0: x}
        for layer in self.layers:
            args = [values[i] for i in layer.inputs]
            w = {k: v.to(device=x.device, dtype=x.dtype) for k, v in layer.weights.items()}
            values[layer.output] = _reference_layer(layer, args, w)
        return values[self.output].reshape(self.output_shape)


def _apply_act(x: torch.Tensor, act: str) -> torch.Tensor:
    if act == "none":
        return x
    return {"relu": F.relu, "relu6": F.relu6, "silu": F.silu, "sigmoid": torch.sigmoid,
            "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid}[act](x)


def _reference_layer(layer: Layer, args: list[torch.Tensor], w: dict[str, torch.Tensor]):
    p = layer.params
    if layer.kind == "conv2d":
        y = F.conv2d(args[0], w["weight"], w["bias"], stride=p["stride"], padding=p["padding"],
                     groups=p["groups"])
    elif layer.kind == "scale_shift":
        y = args[0] * w["scale"].view(1, -1, 1, 1) + w["shift"].view(1, -1, 1, 1)
    elif layer.kind == "act":
        y = args[0]
    elif layer.kind == "max_pool":
        y = F.max_pool2d(args[0], p["kernel"], p["stride"], p["padding"])
    elif layer.kind == "avg_pool":
        y = F.avg_pool2d(args[0], p["kernel"], p["stride"], p["padding"],
                         count_include_pad=p["count_include_pad"])
    elif layer.kind == "global_avg_pool":
        y = args[0].mean(dim=(2, 3), keepdim=True)
    elif layer.kind == "add":
        y = args[0] + args[1]
    elif layer.kind == "concat":
        y = torch.cat(args, dim=1)
    elif layer.kind == "channel_scale":
        y = args[0] * args[1]
    elif layer.kind == "linear":
        y = F.linear(args[0].reshape(args[0].shape[0], -1), w["weight"], w["bias"])
    else:
        raise AssertionError(layer.kind)
    return _apply_act(y, p.get("act", "none")).reshape(layer.shape)


# ---- tracing -------------------------------------------------------------------------------

_act_modules: dict[type, str] = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu",
                                 nn.Sigmoid: "sigmoid", nn.Hardswish: "hardswish",
                                 nn.Hardsigmoid: "hardsigmoid"}
_act_functions: dict[Any, str] = {F.relu: "relu", torch.relu: "relu", F.relu6: "relu6",
                                  F.silu: "silu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
                                  F.hardswish: "hardswish", F.hardsigmoid: "hardsigmoid"}
_act_methods = {"relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "sigmoid_": "sigmoid"}
_identity_modules = (nn.Dropout, nn.Identity, nn.Dropout2d)


def _pair(v: Any) -> tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


def _shape(node: torch.fx.Node) -> tuple[int, ...]:
    meta = node.meta.get("tensor_meta")
    if meta is None or not hasattr(meta, "shape"):
        raise Unsupported(f"'{node.name}' ({node.op} {node.target}) does not give one tensor")
    return tuple(int(d) for d in meta.shape)


def _describe(node: torch.fx.Node, modules: dict[str, nn.Module]) -> str:
    if node.op == "call_module":
        return f"layer '{node.target}' ({type(modules[node.target]).__name__})"
    if node.op == "call_function":
        return f"'{node.name}' ({getattr(node.target, '__name__', str(node.target))})"
    return f"'{node.name}' (method {node.target})"


@dataclass
class _Raw:
    """A graph node classified: what it computes, on which nodes."""

    kind: str  # a layer kind, or "bn" (folded later or kept as scale_shift), "alias", "output"
    node: torch.fx.Node
    inputs: list[torch.fx.Node]
    params: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, torch.Tensor] = field(default_factory=dict)
    fused: list[str] = field(default_factory=list)  # the followers it absorbed, by name
    name: str = ""  # the layer's own name, kept when it takes over a follower's node

    def __post_init__(self) -> None:
        self.name = _layer_name(self.node)


def _conv(node: torch.fx.Node, m: nn.Conv2d, where: str) -> _Raw:
    if m.padding_mode != "zeros":
        raise Unsupported(f"{where}: padding mode '{m.padding_mode}' (only zeros)")
    if _pair(m.dilation) != (1, 1):
        raise Unsupported(f"{where}: dilation {list(_pair(m.dilation))} (only 1)")
    if isinstance(m.padding, str):
        raise Unsupported(f"{where}: padding '{m.padding}' (give it in pixels)")
    bias = m.bias.detach().clone() if m.bias is not None else torch.zeros(m.out_channels)
    return _Raw("conv2d", node, [node.args[0]],
                {"in_channels": m.in_channels, "out_channels": m.out_channels,
                 "kernel": list(_pair(m.kernel_size)), "stride": list(_pair(m.stride)),
                 "padding": list(_pair(m.padding)), "groups": m.groups, "act": "none"},
                {"weight": m.weight.detach().clone().float(), "bias": bias.float()})


def _bn(node: torch.fx.Node, m: nn.BatchNorm2d, where: str) -> _Raw:
    if m.running_mean is None or m.running_var is None:
        raise Unsupported(f"{where}: a batch norm without running statistics")
    scale = 1.0 / torch.sqrt(m.running_var.detach().double() + m.eps)
    if m.weight is not None:
        scale = scale * m.weight.detach().double()
    shift = -m.running_mean.detach().double() * scale
    if m.bias is not None:
        shift = shift + m.bias.detach().double()
    return _Raw("bn", node, [node.args[0]], {"act": "none"}, {"scale": scale, "shift": shift})


def _pool(node: torch.fx.Node, kind: str, kernel: Any, stride: Any, padding: Any, ceil: bool,
          where: str, dilation: Any = 1, count_include_pad: bool = True,
          divisor: Any = None) -> _Raw:
    if ceil:
        raise Unsupported(f"{where}: ceil_mode (only floor)")
    if _pair(dilation) != (1, 1):
        raise Unsupported(f"{where}: dilation {list(_pair(dilation))} (only 1)")
    if divisor is not None:
        raise Unsupported(f"{where}: divisor_override")
    stride = kernel if stride is None or stride == [] else stride
    params = {"kernel": list(_pair(kernel)), "stride": list(_pair(stride)),
              "padding": list(_pair(padding))}
    if kind == "avg_pool":
        params["count_include_pad"] = bool(count_include_pad)
    return _Raw(kind, node, [node.args[0]], params)


def _adaptive_avg(node: torch.fx.Node, out_size: Any, where: str) -> _Raw:
    _, _, h, w = _shape(node.args[0])
    oh, ow = _pair(out_size)
    if (oh, ow) == (1, 1):
        return _Raw("global_avg_pool", node, [node.args[0]])
    if (oh, ow) == (h, w):
        return _Raw("alias", node, [node.args[0]])
    if h % oh or w % ow:
        raise Unsupported(f"{where}: adaptive average pooling of {h}x{w} to {oh}x{ow} "
                          "(only sizes that divide the input)")
    return _Raw("avg_pool", node, [node.args[0]],
                {"kernel": [h // oh, w // ow], "stride": [h // oh, w // ow], "padding": [0, 0],
                 "count_include_pad": True})


def _binary(node: torch.fx.Node, kind: str, where: str) -> _Raw:
    a, b = node.args[0], node.args[1]
    if len(node.args) > 2 or node.kwargs.get("alpha", 1) != 1:
        raise Unsupported(f"{where}: a scaled sum (alpha)")
    if not isinstance(a, torch.fx.Node) or not isinstance(b, torch.fx.Node):
        raise Unsupported(f"{where}: an operation with a constant (only two tensors)")
    sa, sb = _shape(a), _shape(b)
    if kind == "add":
        if sa != sb:
            raise Unsupported(f"{where}: a sum of shapes {list(sa)} and {list(sb)} (one shape)")
        return _Raw("add", node, [a, b], {"act": "none"})
    # A product: one side one value per channel (squeeze-excitation), the other the feature map.
    if len(sa) == 4 and sb == (sa[0], sa[1], 1, 1):
        return _Raw("channel_scale", node, [a, b])
    if len(sb) == 4 and sa == (sb[0], sb[1], 1, 1):
        return _Raw("channel_scale", node, [b, a])
    raise Unsupported(f"{where}: a product of shapes {list(sa)} and {list(sb)} "
                      "(only a feature map times one value per channel)")


def _flatten_ok(node: torch.fx.Node, start: int) -> _Raw:
    if start != 1:
        raise Unsupported(f"'{node.name}': flatten from dimension {start} (only 1)")
    return _Raw("alias", node, [node.args[0]])


def _module_raw(node: torch.fx.Node, m: nn.Module, where: str) -> _Raw:
    if isinstance(m, nn.Conv2d):
        return _conv(node, m, where)
    if isinstance(m, nn.BatchNorm2d):
        return _bn(node, m, where)
    if type(m) in _act_modules:
        return _Raw("act", node, [node.args[0]], {"act": _act_modules[type(m)]})
    if isinstance(m, _identity_modules):
        return _Raw("alias", node, [node.args[0]])
    if isinstance(m, nn.MaxPool2d):
        if m.return_indices:
            raise Unsupported(f"{where}: return_indices")
        return _pool(node, "max_pool", m.kernel_size, m.stride, m.padding, m.ceil_mode, where,
                     dilation=m.dilation)
    if isinstance(m, nn.AvgPool2d):
        return _pool(node, "avg_pool", m.kernel_size, m.stride, m.padding, m.ceil_mode, where,
                     count_include_pad=m.count_include_pad, divisor=m.divisor_override)
    if isinstance(m, nn.AdaptiveAvgPool2d):
        return _adaptive_avg(node, m.output_size, where)
    if isinstance(m, nn.Flatten):
        if m.end_dim != -1:
            raise Unsupported(f"{where}: flatten to dimension {m.end_dim} (only -1)")
        return _flatten_ok(node, m.start_dim)
    if isinstance(m, nn.Linear):
        bias = m.bias.detach().clone() if m.bias is not None else torch.zeros(m.out_features)
        return _Raw("linear", node, [node.args[0]],
                    {"in_features": m.in_features, "out_features": m.out_features, "act": "none"},
                    {"weight": m.weight.detach().clone().float(), "bias": bias.float()})
    raise Unsupported(f"{where} is not supported by the translator")


def _arg(node: torch.fx.Node, index: int, key: str, default: Any) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(key, default)


def _function_raw(node: torch.fx.Node, where: str) -> _Raw:
    t = node.target
    if t in _act_functions:
        return _Raw("act", node, [node.args[0]], {"act": _act_functions[t]})
    if t in (operator.add, operator.iadd, torch.add):
        return _binary(node, "add", where)
    if t in (operator.mul, operator.imul, torch.mul):
        return _binary(node, "mul", where)
    if t is torch.flatten:
        if _arg(node, 2, "end_dim", -1) != -1:
            raise Unsupported(f"{where}: flatten to a dimension other than the last")
        return _flatten_ok(node, int(_arg(node, 1, "start_dim", 0)))
    if t is torch.cat:
        dim = int(_arg(node, 1, "dim", 0))
        tensors = list(node.args[0])
        if dim not in (1, -3) or any(len(_shape(n)) != 4 for n in tensors):
            raise Unsupported(f"{where}: concatenation along dimension {dim} (only channels)")
        return _Raw("concat", node, tensors)
    if t is F.adaptive_avg_pool2d:
        return _adaptive_avg(node, _arg(node, 1, "output_size", None), where)
    if t is F.max_pool2d:
        return _pool(node, "max_pool", _arg(node, 1, "kernel_size", None),
                     _arg(node, 2, "stride", None), _arg(node, 3, "padding", 0),
                     bool(_arg(node, 5, "ceil_mode", False)), where,
                     dilation=_arg(node, 4, "dilation", 1))
    if t is F.avg_pool2d:
        return _pool(node, "avg_pool", _arg(node, 1, "kernel_size", None),
                     _arg(node, 2, "stride", None), _arg(node, 3, "padding", 0),
                     bool(_arg(node, 4, "ceil_mode", False)), where,
                     count_include_pad=bool(_arg(node, 5, "count_include_pad", True)),
                     divisor=_arg(node, 6, "divisor_override", None))
    if t is F.dropout or getattr(t, "__name__", "") == "stochastic_depth":
        training = _arg(node, 3 if getattr(t, "__name__", "") == "stochastic_depth" else 2,
                        "training", False)
        if training:
            raise Unsupported(f"{where} in training mode")
        return _Raw("alias", node, [node.args[0]])
    raise Unsupported(f"{where} is not supported by the translator")


def _method_raw(node: torch.fx.Node, where: str) -> _Raw:
    t = node.target
    if t in _act_methods:
        return _Raw("act", node, [node.args[0]], {"act": _act_methods[t]})
    if t == "flatten":
        return _flatten_ok(node, int(_arg(node, 1, "start_dim", 0)))
    if t in ("view", "reshape"):
        shape = _shape(node)
        if len(shape) == 2 and shape[0] == _shape(node.args[0])[0]:
            return _Raw("alias", node, [node.args[0]])
        raise Unsupported(f"{where}: a reshape to {list(shape)} (only to [batch, features])")
    if t == "mean":
        dims = _arg(node, 1, "dim", None)
        if dims is not None and sorted(int(d) % 4 for d in dims) == [2, 3]:
            return _Raw("global_avg_pool", node, [node.args[0]])
        raise Unsupported(f"{where}: a mean over {dims} (only over height and width)")
    if t in ("add", "add_"):
        return _binary(node, "add", where)
    if t in ("mul", "mul_"):
        return _binary(node, "mul", where)
    if t == "contiguous":
        return _Raw("alias", node, [node.args[0]])
    raise Unsupported(f"{where} is not supported by the translator")


def _classify(gm: torch.fx.GraphModule) -> tuple[torch.fx.Node, list[_Raw], torch.fx.Node]:
    modules = dict(gm.named_modules())
    placeholder = None
    raws: list[_Raw] = []
    result = None
    for node in gm.graph.nodes:
        where = _describe(node, modules) if node.op.startswith("call_") else node.name
        if node.op == "placeholder":
            if placeholder is not None:
                raise Unsupported(f"input '{node.name}': the model must take one tensor")
            placeholder = node
        elif node.op == "output":
            result = node.args[0]
            if not isinstance(result, torch.fx.Node):
                raise Unsupported("the model must return one tensor")
        elif node.op == "call_module":
            raws.append(_module_raw(node, modules[node.target], where))
        elif node.op == "call_function":
            raws.append(_function_raw(node, where))
        elif node.op == "call_method":
            raws.append(_method_raw(node, where))
        else:  # get_attr: a parameter used as a value
            raise Unsupported(f"'{node.name}': a model attribute ({node.target}) used as a value")
    assert placeholder is not None and result is not None
    return placeholder, raws, result


# ---- rewriting -----------------------------------------------------------------------------


def _fold(raws: list[_Raw], result: torch.fx.Node) -> tuple[list[_Raw], torch.fx.Node]:
    """Aliases resolved, batch norms folded into the convolutions they follow, activations into
    the layer before them. A layer that absorbs its follower takes over the follower's node, so
    the layers that read the follower read it."""
    alias: dict[torch.fx.Node, torch.fx.Node] = {}

    def source(n: torch.fx.Node) -> torch.fx.Node:
        while n in alias:
            n = alias[n]
        return n

    kept: list[_Raw] = []
    for r in raws:
        r.inputs = [source(i) for i in r.inputs]
        if r.kind == "alias":
            alias[r.node] = r.inputs[0]
        else:
            kept.append(r)
    result = source(result)
    users: dict[torch.fx.Node, int] = {}
    for r in kept:
        for i in r.inputs:
            users[i] = users.get(i, 0) + 1
    users[result] = users.get(result, 0) + 1
    producer_of: dict[torch.fx.Node, _Raw] = {}
    out: list[_Raw] = []
    for r in kept:
        producer = producer_of.get(r.inputs[0]) if len(r.inputs) == 1 else None
        sole = producer is not None and users.get(producer.node, 0) == 1
        if sole and r.kind == "bn" and producer.kind == "conv2d" and \
                producer.params["act"] == "none":
            scale, shift = r.weights["scale"], r.weights["shift"]
            producer.weights = {
                "weight": (producer.weights["weight"].double() * scale.view(-1, 1, 1, 1)).float(),
                "bias": (producer.weights["bias"].double() * scale + shift).float()}
        elif sole and r.kind == "act" and producer.params.get("act") == "none" and \
                producer.kind in ("conv2d", "linear", "add", "bn"):
            producer.params["act"] = r.params["act"]
        else:
            producer_of[r.node] = r
            out.append(r)
            continue
        del producer_of[producer.node]
        producer.fused.append(_layer_name(r.node))
        producer.node = r.node
        producer_of[r.node] = producer
    for r in out:
        if r.kind == "bn":
            r.kind = "scale_shift"
            r.weights = {k: v.float() for k, v in r.weights.items()}
    return out, result


def translate(model: nn.Module, input_shape: tuple[int, ...]) -> Plan:
    """Traces `model` (switched to eval mode) for an input of `input_shape` (N, C, H, W) and
    returns its plan. Raises Unsupported, naming the layer, for anything the preemptible
    kernel library does not run."""
    shape = tuple(int(d) for d in input_shape)
    if len(shape) != 4 or any(d <= 0 for d in shape):
        raise ValueError(f"input_shape must be (N, C, H, W) with every size positive, "
                         f"not {list(input_shape)}")
    model = model.eval()
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as e:  # torch.fx raises several types; the model is what is refused
        raise Unsupported(f"torch.fx cannot trace {type(model).__name__}: {e}") from e
    with torch.no_grad():
        ShapeProp(gm).propagate(torch.zeros(shape))
    placeholder, raws, result = _classify(gm)
    raws, result = _fold(raws, result)
    ids: dict[torch.fx.Node, int] = {placeholder: 0}
    layers: list[Layer] = []
    for r in raws:
        missing = [i.name for i in r.inputs if i not in ids]
        assert not missing, f"{r.node.name} reads {missing} before they are computed"
        ids[r.node] = len(ids)
        params = dict(r.params, fused=list(r.fused)) if r.fused else dict(r.params)
        layers.append(Layer(r.kind, r.name, [ids[i] for i in r.inputs], ids[r.node],
                            _shape(r.node), params,
                            {k: v.contiguous() for k, v in r.weights.items()}))
    if result is placeholder:
        raise Unsupported("the model returns its input unchanged")
    return Plan(shape, layers, ids[result], _shape(_result_node(gm)))


def _result_node(gm: torch.fx.GraphModule) -> torch.fx.Node:
    for node in gm.graph.nodes:
        if node.op == "output":
            return node.args[0]
    raise AssertionError("no output")


def _layer_name(node: torch.fx.Node) -> str:
    return str(node.target) if node.op == "call_module" else node.name
