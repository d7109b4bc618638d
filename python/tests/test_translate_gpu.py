"""Translated CNNs on the GPU: each of the five torchvision models, translated and run by
resident's preemptible kernels (unpreempted here), against PyTorch eager fp32 on the same GPU
with TF32 off: max |logit difference| <= 1e-3 x max |logit|, and the same top-1 wherever eager's
top-2 margin exceeds ten times that."""

import pytest

from resident_test_env import import_or_skip

torch = import_or_skip("torch")
torchvision = import_or_skip("torchvision")

from resident.translate import translate  # noqa: E402
from test_translate import MODELS, Small, randomize_batch_norms  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def no_tf32():
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def compare(model, shape, inputs=2):
    plan = translate(model, shape)
    resident_model = plan.to_resident()
    cuda_model = model.cuda()
    for i in range(inputs):  # different inputs: the outputs must follow them
        x = torch.randn(shape, generator=torch.Generator().manual_seed(100 + i))
        with torch.no_grad():
            want = cuda_model(x.cuda()).float().cpu()
        got = plan.infer(resident_model, x)
        tolerance = 1e-3 * want.abs().max().item()
        assert (got - want).abs().max().item() <= tolerance
        top2 = want.topk(2, dim=1).values
        sure = (top2[:, 0] - top2[:, 1]) > 10 * tolerance
        assert torch.equal(got.argmax(1)[sure], want.argmax(1)[sure])
    return plan, resident_model


def test_a_small_cnn_of_every_layer_kind_runs_as_pytorch_does():
    torch.manual_seed(3)
    plan, m = compare(randomize_batch_norms(Small(), 5), (2, 3, 32, 32))
    names = [name for name, _ in m.calls]
    assert any(n.endswith(".depthwise_conv2d") for n in names)
    assert m.output_shape == [2, 10] and m.parameters == plan.parameters()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torchvision_models_run_as_pytorch_does(name):
    torch.manual_seed(11)
    model = randomize_batch_norms(getattr(torchvision.models, name)(), 12)
    compare(model, (1, 3, 224, 224))
