"""examples/camera_classifier_two_gpus.py: the camera loop on GPU 0 sends each frame's tensor,
the frame and its verdict through a device link to a classifier loop (GPU 1 where there are two
GPUs, else GPU 0), which draws the class and sends the frame back to a display loop on GPU 0.
Checks the accounting of both links, that each hop delivered the last payload byte for byte, and
the drawn class against eager PyTorch on the very input the loop classified. Skipped without
PyTorch, torchvision or a GPU."""

import importlib.util
import os
import sys

import pytest

import resident
from resident_test_env import import_or_skip
torch = import_or_skip("torch")
import_or_skip("torchvision")

pytestmark = pytest.mark.gpu

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def example():
    sys.path.insert(0, EXAMPLES)
    spec = importlib.util.spec_from_file_location(
        "camera_classifier_two_gpus", os.path.join(EXAMPLES, "camera_classifier_two_gpus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["while", "tail"])
def test_three_loops_hand_every_frame_on_and_draw_its_own_class(mode):
    import torchvision

    ex = example()
    width, height, frames = 256, 128, 40
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(weights=None).eval()
    photo = ex.load_photo(None, width, height)
    cls = min(1, resident.device_count() - 1)
    out = ex.run_pipeline(model, photo, mode=mode, frames=frames, rate=100.0,
                          classifier_device=cls)
    reports = {name: run.report for name, run in out["runs"].items()}
    for name, r in reports.items():
        assert r.stopped, (name, r.error)
    k, c, s = (reports[n].counters for n in ("camera", "classifier", "display"))
    l1, l2 = out["l1"], out["l2"]
    assert l1.published == k.processed  # every frame the camera loop processed went out
    assert c.processed + c.dropped == l1.published
    assert l2.published == c.processed
    assert s.processed + s.dropped == l2.published
    assert s.processed >= frames
    # Each hop delivered the last payload whole: L1 (GPU 0 -> the classifier's GPU) and L2 back.
    pack, net, unpack = out["camera"].pack, out["classifier"].net, out["show"].unpack
    assert torch.equal(pack.outputs[0].cpu(), net.inputs[0].cpu())
    frame_bytes = width * height * 4
    assert torch.equal(net.outputs[0][:frame_bytes].cpu(), unpack.outputs[0].cpu())
    # The class drawn on that frame is eager PyTorch's for the tensor the loop classified.
    with torch.no_grad():
        want = out["classifier"].module(net.inputs[0])
    shown = unpack.outputs[0].view(height, width, 4)
    assert ex.read_label(shown) == ex.read_label(want[:frame_bytes].view(height, width, 4))
