"""Camera -> classifier -> display, in one resident loop.

The camera pipeline's frame (emulated sensor bridge, CSI-2 reconstruction, raw ISP, demosaic to
RGBA8) is resized to a classifier's normalized planar 224 x 224 input, a torchvision model
classifies it inside the loop, and its class is drawn on the frame before the frame goes to the
display, all on the GPU with no host on the path:

  frame_rx -> csi2_reconstruct -> raw_isp -> demosaic (rgba8) --+--> convert_resize (224, planar)
                                                                |              |
                                                                +--> classify_and_draw (torch)
                                                                               |
                                                                          display_tx

The display therefore waits for the classifier: the class on a frame is that frame's own.

    PYTHONPATH=build/python python3 examples/camera_classifier.py --mode while --frames 240 \
        --photo .photos/chelsea.png --png out/classified.png

Random weights (nothing is downloaded): the class is a number in 0..999, not a label.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

import resident
from resident.torch import make_torch_operator

# 3 x 5 glyphs of the digits 0-9, rows top to bottom.
FONT = ("111101101101111", "010110010010111", "111001111100111", "111001111001111",
        "101101111001001", "111100111001111", "111100111101111", "111001001001001",
        "111101111101111", "111101111001111")
SCALE = 8      # each glyph pixel becomes SCALE x SCALE frame pixels
ORIGIN = 8     # top-left corner of the three digits, in frame pixels
DIGIT_W = 4    # glyph columns plus one blank column between digits
LABEL_H, LABEL_W = 5 * SCALE, 3 * DIGIT_W * SCALE  # 40 x 96 frame pixels


def glyph_table() -> torch.Tensor:
    """(10, 5, 4) bool: each digit's glyph with a blank column on its right."""
    g = torch.tensor([[int(c) for c in digit] for digit in FONT], dtype=torch.bool).view(10, 5, 3)
    return torch.nn.functional.pad(g, (0, 1))


class ClassifyAndDraw(torch.nn.Module):
    """(planar (3, 224, 224) float32, frame (H, W, 4) uint8) -> the frame with the top-1 class
    drawn at its top-left corner: label pixels white, the rest of the label box darkened to a
    quarter. Static shapes and no host synchronization, so it captures into a CUDA graph."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("glyphs", glyph_table())

    def label_mask(self, cls: torch.Tensor) -> torch.Tensor:
        """(LABEL_H, LABEL_W) bool: the three decimal digits of `cls` (a 0-d int64 tensor)."""
        digits = torch.stack((cls // 100 % 10, cls // 10 % 10, cls % 10))
        row = self.glyphs[digits].permute(1, 0, 2).reshape(5, 3 * DIGIT_W)  # (5, 12)
        return row[:, None, :, None].expand(5, SCALE, 3 * DIGIT_W, SCALE).reshape(LABEL_H,
                                                                                  LABEL_W)

    def forward(self, planar: torch.Tensor, frame: torch.Tensor) -> torch.Tensor:
        cls = self.model(planar.unsqueeze(0)).argmax(dim=1)[0]
        out = frame.clone()
        box = out[ORIGIN:ORIGIN + LABEL_H, ORIGIN:ORIGIN + LABEL_W, :3]
        mask = self.label_mask(cls).unsqueeze(-1)
        box.copy_(torch.where(mask, torch.full_like(box, 255), box // 4))
        return out


def read_label(frame: torch.Tensor) -> int:
    """The class drawn on `frame` ((H, W, 4) uint8): the inverse of label_mask."""
    box = frame[ORIGIN:ORIGIN + LABEL_H, ORIGIN:ORIGIN + LABEL_W, 0].cpu()
    cells = box[SCALE // 2::SCALE, SCALE // 2::SCALE] == 255  # one sample per glyph pixel
    glyphs = glyph_table()
    value = 0
    for d in range(3):
        cell = cells[:, d * DIGIT_W:(d + 1) * DIGIT_W]
        match = [i for i in range(10) if torch.equal(glyphs[i], cell)]
        if len(match) != 1:
            raise ValueError(f"digit {d} of the label is not a glyph")
        value = value * 10 + match[0]
    return value


def compose_camera(app: resident.Application, bridge: resident.SensorBridge, width: int,
                   height: int) -> tuple:
    """The camera front in `app` (inside compose()): frame_rx (the data-ready handler) ->
    csi2_reconstruct -> raw_isp -> demosaic (RGBA8) -> convert_resize (planar 224 x 224 fp32).
    Returns (reconstruct, demosaic, resize): their outputs "integrity", "rgb" and "out"."""
    size = dict(width=width, height=height)
    rx = app.make_operator("io.frame_rx", "rx", bridge=bridge)
    rec = app.make_operator("imaging.csi2_reconstruct", "reconstruct", **size)
    isp = app.make_operator("imaging.raw_isp", "isp", **size)
    dem = app.make_operator("imaging.demosaic", "demosaic", output="rgba8", **size)
    resize = app.make_operator("imaging.convert_resize", "resize", in_width=width,
                               in_height=height, in_format="rgba8", out_format="planar_f32")
    app.register_data_ready_handler(bridge.make_handler(rx))
    app.add_flow(rx, rec, [("frame", "frame")])
    app.add_flow(rec, isp, [("bayer", "in")])
    app.add_flow(isp, dem, [("out", "bayer")])
    app.add_flow(dem, resize, [("rgb", "in")])
    return rec, dem, resize


class CameraClassifier(resident.Application):
    def __init__(self, bridge: resident.SensorBridge, display: resident.Display, width: int,
                 height: int, model: torch.nn.Module) -> None:
        super().__init__("camera_classifier")
        self.bridge, self.display, self.model = bridge, display, model
        self.width, self.height = width, height
        self.net = None

    def compose(self) -> None:
        rec, dem, resize = compose_camera(self, self.bridge, self.width, self.height)
        planar = torch.zeros(3, 224, 224, device="cuda")
        frame = torch.zeros(self.height, self.width, 4, dtype=torch.uint8, device="cuda")
        self.net = make_torch_operator(self, "classify", ClassifyAndDraw(self.model).cuda(),
                                       (planar, frame), input_names=("planar", "frame"),
                                       output_names=("overlaid",))
        tx = self.make_operator("io.display_tx", "display", display=self.display, input="rgba8")
        self.add_flow(dem, self.net.operator, [("rgb", "frame")])
        self.add_flow(resize, self.net.operator, [("out", "planar")])
        self.add_flow(self.net.operator, tx, [("overlaid", "rgb")])
        self.add_flow(rec, tx, [("integrity", "integrity")])


def load_photo(path: str | None, width: int, height: int) -> torch.Tensor:
    """(height, width, 3) uint8 on the CPU: the photograph, or a colour ramp without one."""
    if path:
        from torchvision.io import ImageReadMode, read_image
        return read_image(path, ImageReadMode.RGB).permute(1, 2, 0).contiguous()
    y = torch.arange(height).view(-1, 1).expand(height, width)
    x = torch.arange(width).view(1, -1).expand(height, width)
    return torch.stack((x * 255 // width, y * 255 // height, torch.full_like(x, 90)),
                       dim=-1).to(torch.uint8).contiguous()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", default="while", choices=resident.modes())
    p.add_argument("--frames", type=int, default=240)
    p.add_argument("--width", type=int, default=1920)
    p.add_argument("--height", type=int, default=1080)
    p.add_argument("--rate", type=float, default=60.0, help="sensor frame rate (Hz)")
    p.add_argument("--model", default="mobilenet_v2", help="a torchvision classifier")
    p.add_argument("--photo", default=None, help="a PNG to film (default: a colour ramp)")
    p.add_argument("--png", default=None, help="write the last displayed frame here")
    a = p.parse_args(argv)
    if resident.device_count() == 0:
        print(f"camera_classifier: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).cuda().eval()
    photo = load_photo(a.photo, a.width, a.height)
    bridge = resident.SensorBridge(memoryview(photo.numpy()), width=a.width, height=a.height,
                                   rate_hz=a.rate)
    display = resident.Display(width=a.width, height=a.height)
    app = CameraClassifier(bridge, display, a.width, a.height, model)
    # Compose (and so capture the model) before the display's engine kernel starts: PyTorch
    # loads its kernels lazily, and a load waits while a kernel that never ends occupies the GPU.
    app.plan()
    display.start()
    bridge.start()
    try:
        with app.run(a.mode, poll_ns=2_000_000 if a.mode in ("while", "tail") else 0) as run:
            deadline = time.monotonic() + a.frames / a.rate + 10
            while run.counters().processed < a.frames and time.monotonic() < deadline:
                time.sleep(0.01)
            bridge.stop()
            report = run.tear_down()
    finally:
        bridge.stop()
        display.stop()
    c = report.counters
    print(f"camera_classifier ({a.mode}): {c.processed} frames classified and displayed, "
          f"{c.dropped} dropped; class on the last frame: {read_label(app.net.outputs[0])}")
    if a.png:
        from torchvision.io import write_png
        os.makedirs(os.path.dirname(os.path.abspath(a.png)), exist_ok=True)
        shown = torch.frombuffer(bytearray(display.copy_front()), dtype=torch.uint8)
        write_png(shown.view(a.height, a.width, 4)[..., :3].permute(2, 0, 1).contiguous(), a.png)
        print(f"camera_classifier: last displayed frame in {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
