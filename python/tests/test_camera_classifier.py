"""examples/camera_classifier.py: the camera pipeline's frame classified inside the loop and the
class drawn on it before the display. Checks the drawn class against eager PyTorch on the very
input the loop classified, and that nothing outside the label changed. Skipped without PyTorch,
torchvision or a GPU."""

import importlib.util
import os
import time

import pytest

import resident
from resident_test_env import import_or_skip
torch = import_or_skip("torch")
import_or_skip("torchvision")

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "camera_classifier.py")


def example():
    spec = importlib.util.spec_from_file_location("camera_classifier", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_label_round_trips_for_every_class():
    ex = example()
    draw = ex.ClassifyAndDraw(torch.nn.Identity())
    for cls in (0, 7, 42, 100, 999):
        frame = torch.full((64, 128, 4), 200, dtype=torch.uint8)
        box = frame[ex.ORIGIN:ex.ORIGIN + ex.LABEL_H, ex.ORIGIN:ex.ORIGIN + ex.LABEL_W, :3]
        mask = draw.label_mask(torch.tensor(cls)).unsqueeze(-1)
        box.copy_(torch.where(mask, torch.full_like(box, 255), box // 4))
        assert ex.read_label(frame) == cls


@pytest.mark.parametrize("mode", ["host-graph", "while", "tail"])
def test_each_frame_carries_its_own_class(mode):
    import torchvision

    ex = example()
    width, height = 256, 128
    # The same kernels in the captured graph and in the eager reference below.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None).cuda().eval()
    photo = ex.load_photo(None, width, height)
    bridge = resident.SensorBridge(memoryview(photo.numpy()), width=width, height=height,
                                   rate_hz=200.0)
    display = resident.Display(width=width, height=height)
    app = ex.CameraClassifier(bridge, display, width, height, model)
    app.plan()  # the capture before the display's engine kernel runs (see the example)
    display.start()
    bridge.start()
    try:
        with app.run(mode, poll_ns=2_000_000 if mode in ("while", "tail") else 0) as run:
            deadline = time.monotonic() + 10
            while run.counters().processed < 20 and time.monotonic() < deadline:
                time.sleep(0.005)
            bridge.stop()
            time.sleep(0.02)
            report = run.tear_down()
    finally:
        bridge.stop()
        display.stop()
    assert report.counters.processed >= 20
    # The loop's last iteration: the input it classified, the frame it drew on, and the result.
    planar, frame = app.net.inputs
    overlaid = app.net.outputs[0]
    with torch.no_grad():
        want = int(model(planar.unsqueeze(0)).argmax(dim=1)[0])
    assert ex.read_label(overlaid) == want
    outside = torch.ones(height, width, dtype=torch.bool, device="cuda")
    outside[ex.ORIGIN:ex.ORIGIN + ex.LABEL_H, ex.ORIGIN:ex.ORIGIN + ex.LABEL_W] = False
    assert torch.equal(overlaid[outside], frame[outside])
    assert int(overlaid[..., 3].min()) == int(frame[..., 3].min())
    written = display.counters()
    assert written["frames_written"] + written["corrupt_frames"] == report.counters.processed
