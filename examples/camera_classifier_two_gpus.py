"""Camera on GPU 0 -> classifier on GPU 1 -> display on GPU 0, three loops, no host between them.

The one-GPU example (camera_classifier.py) split over two GPUs with io::device_link: the camera
loop on GPU 0 sends each frame's 224 x 224 planar tensor, the frame itself and its integrity
verdict (one packed payload) to the classifier loop on GPU 1, which classifies the tensor, draws
the class on the frame and sends the frame and the verdict back to a display loop on GPU 0:

  GPU 0  camera:     frame_rx -> reconstruct -> isp -> demosaic --> resize --+
                                     |                     |                 v
                                     +-- integrity --------+------------> pack -> link_tx (L1)
  GPU 1  classifier: link_rx (L1) -> classify_and_draw (torch) -> link_tx (L2)
  GPU 0  display:    link_rx (L2) -> unpack -> display_tx (the commit waits for the verdict)

Each loop's telemetry is on its own GPU's clock; the end-to-end time (the frame's arrival at
the camera loop -> the display's commit) is on GPU 0's clock alone, and so are the camera and
display stages. The two handoffs each compare two clocks: their sum (the round trip) does not
depend on the clocks' offset, each alone does (bench link calibrates it). With one GPU every
loop runs on GPU 0 (--classifier-device 0), which tests the same code.

    PYTHONPATH=build/python python3 examples/camera_classifier_two_gpus.py --mode while \\
        --frames 240 --photo .photos/chelsea.png --png out/two-gpus.png

Random weights (nothing is downloaded): the class is a number in 0..999, not a label.
Modes: host-graph, while, tail (PyTorch graphs have no device form, so no persistent).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

import resident
from resident.torch import make_torch_operator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from camera_classifier import (ClassifyAndDraw, compose_camera, load_photo,  # noqa: E402
                               read_label)

MODES = ("host-graph", "while", "tail")


class Pack(torch.nn.Module):
    """Tensors -> one uint8 payload (their bytes, in order)."""

    def forward(self, *parts: torch.Tensor) -> torch.Tensor:
        return torch.cat([p.reshape(-1).view(torch.uint8) for p in parts])


class Unpack(torch.nn.Module):
    """uint8 payload -> the frame's bytes and the verdict's, each a tensor of its own."""

    def __init__(self, frame_bytes: int) -> None:
        super().__init__()
        self.frame_bytes = frame_bytes

    def forward(self, packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return packed[:self.frame_bytes].clone(), packed[self.frame_bytes:].clone()


class ClassifyPacked(torch.nn.Module):
    """(planar, frame, verdict) packed -> (the frame with its class drawn, verdict) packed."""

    def __init__(self, model: torch.nn.Module, width: int, height: int) -> None:
        super().__init__()
        self.draw = ClassifyAndDraw(model)
        self.width, self.height = width, height
        self.planar_bytes = 3 * 224 * 224 * 4
        self.frame_bytes = width * height * 4

    def forward(self, packed: torch.Tensor) -> torch.Tensor:
        planar = packed[:self.planar_bytes].view(torch.float32).view(3, 224, 224)
        end = self.planar_bytes + self.frame_bytes
        frame = packed[self.planar_bytes:end].view(self.height, self.width, 4)
        overlaid = self.draw(planar, frame)
        return torch.cat((overlaid.reshape(-1), packed[end:]))


class Camera(resident.Application):
    """GPU 0: the camera pipeline, its outputs packed into link L1."""

    def __init__(self, bridge: resident.SensorBridge, width: int, height: int,
                 classifier_device: int) -> None:
        super().__init__("camera")
        self.bridge, self.width, self.height = bridge, width, height
        self.classifier_device = classifier_device
        self.link: resident.DeviceLink | None = None  # made in compose(), sized by the ports
        self.integrity_bytes = 0

    def compose(self) -> None:
        rec, dem, resize = compose_camera(self, self.bridge, self.width, self.height)
        self.integrity_bytes = rec.port_bytes("integrity")
        examples = (torch.zeros(3, 224, 224, device="cuda:0"),
                    torch.zeros(self.height, self.width, 4, dtype=torch.uint8, device="cuda:0"),
                    torch.zeros(self.integrity_bytes, dtype=torch.uint8, device="cuda:0"))
        self.pack = make_torch_operator(self, "pack", Pack(), examples,
                                        input_names=("planar", "frame", "integrity"))
        # L1 carries the three, packed: its size from the operators' own ports.
        self.link = resident.DeviceLink(self.pack.outputs[0].nbytes, depth=4, producer_device=0,
                                        consumer_device=self.classifier_device)
        tx = self.make_operator("io.link_tx", "link", link=self.link)
        self.add_flow(resize, self.pack.operator, [("out", "planar")])
        self.add_flow(dem, self.pack.operator, [("rgb", "frame")])
        self.add_flow(rec, self.pack.operator, [("integrity", "integrity")])
        self.add_flow(self.pack.operator, tx, [("output", "in")])


class Classifier(resident.Application):
    """GPU `device`: link L1 -> classify and draw -> link L2."""

    def __init__(self, l1: resident.DeviceLink, l2: resident.DeviceLink, model: torch.nn.Module,
                 width: int, height: int, device: int) -> None:
        super().__init__("classifier")
        self.l1, self.l2, self.device = l1, l2, device
        self.module = ClassifyPacked(model, width, height).to(f"cuda:{device}")

    def compose(self) -> None:
        rx = self.make_operator("io.link_rx", "link_in", link=self.l1)
        example = torch.zeros(self.l1.bytes, dtype=torch.uint8, device=f"cuda:{self.device}")
        self.net = make_torch_operator(self, "classify", self.module, example)
        tx = self.make_operator("io.link_tx", "link_out", link=self.l2)
        self.register_data_ready_handler(self.l1.make_handler(rx))
        self.add_flow(rx, self.net.operator, [("sample", "input")])
        self.add_flow(self.net.operator, tx, [("output", "in")])


class Show(resident.Application):
    """GPU 0: link L2 -> unpack -> display (the commit waits for the frame's verdict)."""

    def __init__(self, l2: resident.DeviceLink, display: resident.Display,
                 frame_bytes: int) -> None:
        super().__init__("display")
        self.l2, self.display, self.frame_bytes = l2, display, frame_bytes

    def compose(self) -> None:
        rx = self.make_operator("io.link_rx", "link", link=self.l2)
        example = torch.zeros(self.l2.bytes, dtype=torch.uint8, device="cuda:0")
        self.unpack = make_torch_operator(self, "unpack", Unpack(self.frame_bytes), example,
                                          output_names=("frame", "integrity"))
        tx = self.make_operator("io.display_tx", "display", display=self.display, input="rgba8")
        self.register_data_ready_handler(self.l2.make_handler(rx))
        self.add_flow(rx, self.unpack.operator, [("sample", "input")])
        self.add_flow(self.unpack.operator, tx, [("frame", "rgb"), ("integrity", "integrity")])


def stage_table(camera: list, classifier: list, show: list, warmup: int) -> dict[str, float]:
    """Median µs per stage, pairing the k-th processed sample of each loop (nothing dropped):
    camera (arrival -> egress start, GPU 0), handoff L1 (GPU 1 sighting - GPU 0 egress start),
    classifier (sighting -> egress start, GPU 1), handoff L2 (GPU 0 sighting - GPU 1 egress
    start), display (sighting -> commit, GPU 0), and end to end (arrival -> commit, GPU 0). The
    stages add up to the end to end whatever the clocks' offset."""
    done = [[e for e in loop if e.seq != 0 and e.repeat == 0] for loop in (camera, classifier,
                                                                           show)]
    n = min(len(d) for d in done)
    rows: dict[str, list[float]] = {k: [] for k in ("camera", "handoff_l1", "classifier",
                                                      "handoff_l2", "display", "end_to_end")}
    for a, b, c in list(zip(*(d[:n] for d in done)))[warmup:]:
        rows["camera"].append(b.stamp("arrival") - a.stamp("arrival"))
        rows["handoff_l1"].append(b.stamp("detect") - b.stamp("arrival"))
        rows["classifier"].append(c.stamp("arrival") - b.stamp("detect"))
        rows["handoff_l2"].append(c.stamp("detect") - c.stamp("arrival"))
        rows["display"].append(c.stamp("commit") - c.stamp("detect"))
        rows["end_to_end"].append(c.stamp("commit") - a.stamp("arrival"))
    return {k: statistics.median(v) / 1e3 for k, v in rows.items() if v}


def run_pipeline(model: torch.nn.Module, photo: torch.Tensor, *, mode: str, frames: int,
                 rate: float, classifier_device: int) -> dict:
    """Composes the three loops, runs them for `frames` frames and tears them down (last loop
    of the chain first). Returns the applications, the links and the three tear-down reports
    (with each loop's telemetry)."""
    height, width = photo.shape[0], photo.shape[1]
    cls = classifier_device
    bridge = resident.SensorBridge(memoryview(photo.numpy()), width=width, height=height,
                                   rate_hz=rate)
    display = resident.Display(width=width, height=height)
    camera = Camera(bridge, width, height, cls)
    # Compose (capture every PyTorch graph) before anything runs on the GPU.
    camera.plan()
    frame_bytes = width * height * 4
    l2 = resident.DeviceLink(frame_bytes + camera.integrity_bytes, depth=4, producer_device=cls,
                             consumer_device=0)
    classifier = Classifier(camera.link, l2, model, width, height, cls)
    with torch.cuda.device(cls):
        classifier.plan()
    show = Show(l2, display, frame_bytes)
    show.plan()
    options = dict(telemetry_samples=frames + 64)
    if mode != "host-graph":
        options["poll_ns"] = 2_000_000
    try:
        # Every loop is set up before anything runs on the GPU (resident.run_together): a set-up
        # beside a kernel that never ends can wait for the device to go idle, which it never is
        # (instantiating the classifier's PyTorch graph beside the running camera loop did).
        # Consumers are launched first (display loop, classifier, then camera), and the display
        # engine and the sensor after the loops, so no frame is sent to a loop that is not
        # there yet. The set-up is watched.
        with watched("setting up the three loops"):
            s, c, k = resident.run_together((show, mode, dict(options, device=0)),
                                            (classifier, mode, dict(options, device=cls)),
                                            (camera, mode, dict(options, device=0)))
        with k, c, s:  # torn down display first, then the classifier, then the camera
            display.start()
            bridge.start()
            wait_for_frames(s, frames, rate)
            bridge.stop()
            time.sleep(0.05)  # the last frame through the three loops
    finally:
        with watched("stopping the bridge and the display"):
            bridge.stop()
            display.stop()
    return dict(camera=camera, classifier=classifier, show=show, display=display, l1=camera.link,
                l2=l2, runs=dict(camera=k, classifier=c, display=s))


def wait_for_frames(s: resident.Run, frames: int, rate: float) -> None:
    deadline = time.monotonic() + frames / rate + 10
    while s.counters().processed < frames and time.monotonic() < deadline:
        time.sleep(0.01)


class watched:
    """Watches a step that may wait on something that never comes (a loop's set-up: a CUDA call
    waiting for an idle device): a C++ call cannot be interrupted from Python, so past `limit_s`
    this names the step, dumps every thread's stack and ends the process with exit code 3."""

    def __init__(self, what: str, limit_s: float = 120.0) -> None:
        import threading

        self._timer = threading.Timer(limit_s, self._expired, (what, limit_s))
        self._timer.daemon = True

    @staticmethod
    def _expired(what: str, limit_s: float) -> None:
        import faulthandler

        print(f"camera_classifier_two_gpus: {what} did not finish in {limit_s:.0f} s",
              file=sys.stderr, flush=True)
        faulthandler.dump_traceback(all_threads=True)
        os._exit(3)

    def __enter__(self) -> None:
        self._timer.start()

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", default="while", choices=MODES)
    p.add_argument("--frames", type=int, default=240)
    p.add_argument("--width", type=int, default=1920)
    p.add_argument("--height", type=int, default=1080)
    p.add_argument("--rate", type=float, default=60.0, help="sensor frame rate (Hz)")
    p.add_argument("--model", default="mobilenet_v2", help="a torchvision classifier")
    p.add_argument("--classifier-device", type=int, default=-1,
                   help="the classifier's GPU (-1: 1 where there are two GPUs, else 0)")
    p.add_argument("--photo", default=None, help="a PNG to film (default: a colour ramp)")
    p.add_argument("--png", default=None, help="write the last displayed frame here")
    a = p.parse_args(argv)
    if resident.device_count() == 0:
        print(f"camera_classifier_two_gpus: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    if a.frames < 1 or a.rate <= 0:
        p.error("--frames must be >= 1 and --rate > 0")
    cls = a.classifier_device if a.classifier_device >= 0 else min(1, resident.device_count() - 1)
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).eval()
    out = run_pipeline(model, load_photo(a.photo, a.width, a.height), mode=a.mode,
                       frames=a.frames, rate=a.rate, classifier_device=cls)
    runs = out["runs"]
    for name, run in runs.items():
        c = run.report.counters
        print(f"camera_classifier_two_gpus ({a.mode}, classifier on GPU {cls}): {name} loop "
              f"processed {c.processed}, dropped {c.dropped}")
    last = out["show"].unpack.outputs[0].view(a.height, a.width, 4)
    print(f"camera_classifier_two_gpus: links published {out['l1'].published} and "
          f"{out['l2'].published}; class on the last frame: {read_label(last)}")
    if all(run.report.counters.dropped == 0 for run in runs.values()):
        stages = stage_table(runs["camera"].telemetry(), runs["classifier"].telemetry(),
                             runs["display"].telemetry(), warmup=10)
        print("camera_classifier_two_gpus: median us per stage: " +
              ", ".join(f"{name} {us:.1f}" for name, us in stages.items()))
    else:
        print("camera_classifier_two_gpus: a loop dropped frames, so samples are not paired "
              "across loops; no stage table")
    if a.png:
        from torchvision.io import write_png
        os.makedirs(os.path.dirname(os.path.abspath(a.png)), exist_ok=True)
        shown = torch.frombuffer(bytearray(out["display"].copy_front()), dtype=torch.uint8)
        write_png(shown.view(a.height, a.width, 4)[..., :3].permute(2, 0, 1).contiguous(), a.png)
        print(f"camera_classifier_two_gpus: last displayed frame in {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
