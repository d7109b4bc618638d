"""PyTorch modules as resident operators.

    from resident.torch import make_torch_operator

    class Classify(resident.Application):
        def compose(self):
            rx = self.make_operator("io.mailbox_rx", "rx", mailbox=self.mailbox)
            net = make_torch_operator(self, "net", model, torch.zeros(1, 3, 224, 224, device="cuda"))
            tx = self.make_operator("io.mailbox_tx", "tx", mailbox=self.mailbox)
            self.add_flow(rx, net.operator, [("sample", "input")])
            self.add_flow(net.operator, tx, [("output", "in")])

The module is warmed up on a side stream, captured once with torch.cuda.graph into a CUDA graph
(kept, not instantiated by PyTorch) and added as an ops.captured_graph operator whose ports are
the static tensors' memory: upstream operators write the input tensor, downstream ones read the
output tensor. The module, the torch graph (which owns the memory pool of the intermediate
tensors) and the static tensors are kept with the application for its lifetime.

Results equal the module's own eager output up to floating-point reassociation: the captured
kernels are the ones eager PyTorch ran, so with TF32 off they agree to about 1e-6 relative;
with TF32 or cuDNN's benchmark mode on, algorithm choices may differ between warm-up and capture.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, Tuple, Union

import torch

from . import Application, Operator

Tensors = Union[torch.Tensor, Sequence[torch.Tensor]]


@dataclasses.dataclass(frozen=True)
class TorchOperator:
    """What make_torch_operator made: the operator (for add_flow), its static tensors (the port
    memory; named input_names/output_names), the torch graph and the module."""

    operator: Operator
    inputs: Tuple[torch.Tensor, ...]
    outputs: Tuple[torch.Tensor, ...]
    input_names: Tuple[str, ...]
    output_names: Tuple[str, ...]
    graph: Any  # torch.cuda.CUDAGraph
    module: Any
    partition: Any = None  # the partition whose stream captured it (None: the whole GPU)


def _as_tuple(x: Tensors, what: str) -> Tuple[torch.Tensor, ...]:
    items = (x,) if isinstance(x, torch.Tensor) else tuple(x)
    if not items:
        raise ValueError(f"make_torch_operator: no {what} tensors")
    for t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"make_torch_operator: {what} must be tensors, got {type(t).__name__}")
        if not t.is_cuda:
            raise ValueError(f"make_torch_operator: {what} tensors must be on a CUDA device, got "
                             f"{t.device}")
    return items


def _port_names(names: Sequence[str] | None, count: int, stem: str) -> Tuple[str, ...]:
    if names is None:
        return (stem,) if count == 1 else tuple(f"{stem}{i}" for i in range(count))
    names = tuple(names)
    if len(names) != count:
        raise ValueError(f"make_torch_operator: {len(names)} {stem} names for {count} tensors")
    return names


def capture_graph(module: Any, *inputs: Any, keep_graph: bool = True, warmup: int = 3,
                  stream: Any = None) -> tuple[Any, Any]:
    """`module(*inputs)` run `warmup` times on a side stream (lazy initialization, cuBLAS and
    cuDNN handles: none of that may happen inside a capture), then captured without autograd as
    a CUDA graph: (the torch.cuda.CUDAGraph, what the captured call returned, whose tensors a
    replay rewrites). keep_graph=True keeps its cudaGraph_t (raw_cuda_graph()) for resident to
    run or gate; PyTorch then instantiates it on the first replay. `stream`: the capture stream
    (a torch.cuda.Stream or ExternalStream; default: a new stream for this graph alone, which
    lives as long as the graph). A graph's kernels keep the context of the stream they were
    captured on, so a graph meant for a partition is captured on one of its streams
    (Partition.make_stream). The graph reads the module's parameters and the inputs at every
    replay: both are kept with the graph (graph._resident_keep), so a caller that drops its own
    references cannot free memory the graph still reads."""
    device = next((t.device for t in inputs if isinstance(t, torch.Tensor)), None)
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(warmup):
            module(*inputs)
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph(keep_graph=keep_graph)
    owner = None
    if stream is None:
        # A stream of this graph's own: PyTorch keys cuBLAS workspaces by capture stream, so
        # graphs captured on one stream share a workspace, and destroying any of them frees it
        # under the others (pytorch/pytorch#193402: their replays then fault).
        from resident import _resident

        with torch.cuda.device(device):  # a stream of the inputs' device
            owner = _resident.Stream()
        stream = torch.cuda.ExternalStream(owner.handle, device=device)
    with torch.no_grad(), torch.cuda.graph(graph, stream=stream):
        result = module(*inputs)
    # The capture stream (when it is this graph's own), the module (its parameters) and the
    # inputs live as long as the graph.
    graph._resident_keep = (owner, module, inputs)
    return graph, result


def make_torch_operator(app: Application, name: str, module: Any, example_inputs: Tensors, *,
                        input_names: Sequence[str] | None = None,
                        output_names: Sequence[str] | None = None,
                        warmup: int = 3, partition: Any = None) -> TorchOperator:
    """Captures `module(*inputs)` (inputs: static copies of `example_inputs`) as a CUDA graph
    and adds it to `app` as operator `name`. Ports: "input" and "output" for one tensor each,
    else "input0", "input1", ... and "output0", ... (or the names given). Call it in compose(),
    and compose (app.plan()) before any kernel that never ends runs on the GPU (a display
    engine, another resident loop): PyTorch loads kernels lazily, and a load waits for them.
    `partition`: the SM partition the application will run in (run(partition=...)); the graph
    is captured on one of its streams, since a graph's kernels keep the context they were
    captured in, and a run in another partition (or in none) is refused by name."""
    if warmup < 1:
        raise ValueError("make_torch_operator: warmup must be at least 1 (lazy initialization "
                         "and cuBLAS/cuDNN handles must happen before the capture)")
    inputs = tuple(t.detach().clone().contiguous() for t in _as_tuple(example_inputs, "input"))
    stream = None
    if partition is not None:
        owner = partition.make_stream()  # the partition's device
        stream = torch.cuda.ExternalStream(owner.handle)
    graph, result = capture_graph(module, *inputs, warmup=warmup, stream=stream)
    if partition is not None:
        graph._resident_partition_stream = owner  # lives as long as the graph
    outputs = _as_tuple(result, "output")
    for t in outputs:
        if not t.is_contiguous():
            raise ValueError("make_torch_operator: the module's outputs must be contiguous "
                             "(return .contiguous() from forward)")
    in_names = _port_names(input_names, len(inputs), "input")
    out_names = _port_names(output_names, len(outputs), "output")
    op = app.make_captured_graph(
        name, graph.raw_cuda_graph(),
        [(n, t.data_ptr(), t.nbytes) for n, t in zip(in_names, inputs)],
        [(n, t.data_ptr(), t.nbytes) for n, t in zip(out_names, outputs)])
    made = TorchOperator(op, inputs, outputs, in_names, out_names, graph, module, partition)
    # The graph's memory pool and the tensors must outlive every run of the application.
    app.__dict__.setdefault("_torch_operators", []).append(made)
    return made
