"""resident.translate on the CPU: a small CNN built here (every layer kind, folded batch norms,
fused activations) and torchvision's ResNet-50, VGG-16, MobileNetV2, DenseNet-121 and
EfficientNet-B0, each plan evaluated with PyTorch's operators against the model's own output;
layers the kernel library does not run refused by name."""

import json

import pytest

from resident_test_env import import_or_skip

torch = import_or_skip("torch")
torchvision = import_or_skip("torchvision")
from torch import nn  # noqa: E402

from resident.translate import Unsupported, translate  # noqa: E402

SHAPE = (2, 3, 32, 32)


def randomize_batch_norms(model, seed):
    """Batch norms with statistics far from (0, 1), so a fold that forgets one term shows."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=g) * 0.4 - 0.2)
    return model.eval()


class Squeeze(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(c, c // 2, 1)
        self.act = nn.SiLU()
        self.fc2 = nn.Conv2d(c // 2, c, 1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class Small(nn.Module):
    """Every layer kind: conv-bn-relu, a strided padded conv, depthwise conv-bn-relu6, max and
    average pooling, a residual sum with its relu, squeeze-excitation, a batch norm and relu that
    follow a concatenation (not foldable), hardswish, dropout, flatten, linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(8)
        self.stem_relu = nn.ReLU(inplace=True)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
        self.dw_bn = nn.BatchNorm2d(16)
        self.dw_act = nn.ReLU6()
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.se = Squeeze(16)
        self.cat_bn = nn.BatchNorm2d(32)
        self.cat_relu = nn.ReLU()
        self.mix = nn.Conv2d(32, 16, 1)
        self.hs = nn.Hardswish()
        self.avg = nn.AvgPool2d(2)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.stem_relu(self.stem_bn(self.stem(x)))
        x = self.down(x)
        y = self.dw_act(self.dw_bn(self.dw(x)))
        x = torch.relu(x + y)
        x = self.pool(x)
        s = self.se(x)
        x = self.cat_relu(self.cat_bn(torch.cat([x, s], 1)))
        x = self.avg(self.hs(self.mix(x)))
        return self.fc(self.drop(torch.flatten(x, 1)))


def close(plan, model, x):
    with torch.no_grad():
        want = model(x)
        got = plan.reference(x)
    assert got.shape == want.shape
    scale = want.abs().max().item()
    assert scale > 0
    return (got - want).abs().max().item() / scale


def test_a_small_cnn_of_every_layer_kind_translates_to_the_same_function():
    torch.manual_seed(3)
    model = randomize_batch_norms(Small(), 5)
    plan = translate(model, SHAPE)
    assert plan.counts() == {"conv2d": 6, "add": 1, "max_pool": 1, "global_avg_pool": 1,
                             "channel_scale": 1, "concat": 1, "scale_shift": 1, "avg_pool": 1,
                             "linear": 1}
    acts = {l.name: l.params.get("act") for l in plan.layers}
    assert acts["stem"] == "relu" and acts["dw"] == "relu6" and acts["mix"] == "hardswish"
    assert acts["se.fc1"] == "silu" and acts["se.fc2"] == "sigmoid" and acts["down"] == "none"
    assert [l.params["act"] for l in plan.layers if l.kind in ("add", "scale_shift")] == \
        ["relu", "relu"]
    depthwise = next(l for l in plan.layers if l.name == "dw")
    assert depthwise.params["groups"] == 16 and list(depthwise.weights["weight"].shape) == \
        [16, 1, 3, 3]
    down = next(l for l in plan.layers if l.name == "down")
    assert down.params["stride"] == [2, 2] and down.params["padding"] == [1, 1]
    # Two different inputs: the plan is the model's function, not one of its outputs.
    a, b = torch.randn(SHAPE), torch.randn(SHAPE)
    assert close(plan, model, a) <= 1e-5 and close(plan, model, b) <= 1e-5
    with torch.no_grad():
        assert not torch.equal(plan.reference(a), plan.reference(b))


def test_a_folded_batch_norm_is_the_formula_and_an_unfoldable_one_is_a_scale_and_shift():
    torch.manual_seed(4)
    model = randomize_batch_norms(Small(), 6)
    plan = translate(model, SHAPE)
    bn, conv = model.stem_bn, model.stem
    scale = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
    stem = next(l for l in plan.layers if l.name == "stem")
    torch.testing.assert_close(stem.weights["weight"],
                               conv.weight.detach() * scale.view(-1, 1, 1, 1))
    torch.testing.assert_close(stem.weights["bias"],
                               bn.bias.detach() - bn.running_mean * scale)
    kept = next(l for l in plan.layers if l.kind == "scale_shift")
    cat_bn = model.cat_bn
    cat_scale = cat_bn.weight.detach() / torch.sqrt(cat_bn.running_var + cat_bn.eps)
    torch.testing.assert_close(kept.weights["scale"], cat_scale)
    torch.testing.assert_close(kept.weights["shift"],
                               cat_bn.bias.detach() - cat_bn.running_mean * cat_scale)
    assert kept.name == "cat_bn"


def test_the_plan_is_a_dag_over_tensor_ids_and_describes_itself_as_json():
    plan = translate(randomize_batch_norms(Small(), 7), SHAPE)
    seen = {0}
    for layer in plan.layers:
        assert all(i in seen for i in layer.inputs), layer.name
        assert layer.output not in seen
        seen.add(layer.output)
    assert plan.output == plan.layers[-1].output and plan.output_shape == (2, 10)
    d = json.loads(json.dumps(plan.describe()))
    assert d["counts"]["conv2d"] == 6 and d["parameters"] == plan.parameters()
    assert sum(p.numel() for p in Small().parameters()) > plan.parameters()  # no batch norms


class WithLayer(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.odd = layer

    def forward(self, x):
        return self.odd(self.conv(x))


@pytest.mark.parametrize("layer, words", [
    (nn.GELU(), ["layer 'odd' (GELU)", "not supported"]),
    (nn.Conv2d(4, 4, 3, dilation=2, padding=2), ["layer 'odd' (Conv2d)", "dilation"]),
    (nn.MaxPool2d(3, 2, ceil_mode=True), ["layer 'odd' (MaxPool2d)", "ceil_mode"]),
    (nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"), ["'odd'", "padding mode"]),
    (nn.AdaptiveAvgPool2d(5), ["layer 'odd' (AdaptiveAvgPool2d)", "32x32 to 5x5"]),
    (nn.LayerNorm([4, 32, 32]), ["layer 'odd' (LayerNorm)"]),
])
def test_a_layer_the_kernels_do_not_run_is_refused_by_name(layer, words):
    with pytest.raises(Unsupported) as e:
        translate(WithLayer(layer), (1, 3, 32, 32))
    for w in words:
        assert w in str(e.value)


class Product(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)  # two full maps: not one value per channel


def test_a_product_of_two_feature_maps_and_a_bad_input_shape_are_refused():
    with pytest.raises(Unsupported, match="product of shapes"):
        translate(Product(), (1, 3, 8, 8))
    with pytest.raises(ValueError, match="N, C, H, W"):
        translate(Small(), (3, 32, 32))
    plan = translate(randomize_batch_norms(Small(), 8), SHAPE)
    with pytest.raises(ValueError, match="translated for input"):
        plan.reference(torch.zeros(1, 3, 32, 32))


MODELS = {  # name: the layer kinds its plan must hold (at least these counts)
    "resnet50": {"conv2d": 53, "add": 16, "max_pool": 1, "global_avg_pool": 1, "linear": 1},
    "vgg16": {"conv2d": 13, "max_pool": 5, "linear": 3},
    "mobilenet_v2": {"conv2d": 52, "add": 10, "global_avg_pool": 1, "linear": 1},
    "densenet121": {"conv2d": 120, "scale_shift": 62, "concat": 62, "avg_pool": 3},
    "efficientnet_b0": {"conv2d": 81, "channel_scale": 16, "add": 9, "global_avg_pool": 17},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torchvision_models_translate_to_their_own_function(name):
    torch.manual_seed(11)
    model = randomize_batch_norms(getattr(torchvision.models, name)(), 12)
    plan = translate(model, (1, 3, 224, 224))
    counts = plan.counts()
    for kind, n in MODELS[name].items():
        assert counts.get(kind) == n, (kind, counts)
    assert close(plan, model, torch.randn(1, 3, 224, 224)) <= 1e-5


def test_a_plan_the_kernels_cannot_run_is_refused_by_layer_before_anything_is_allocated():
    """No GPU needed: the native model checks the whole plan before its first CUDA call."""
    plan = translate(randomize_batch_norms(Small(), 5), SHAPE)
    plan.layers[0].weights["weight"] = plan.layers[0].weights["weight"][:1]
    with pytest.raises(ValueError, match=r"layer 'stem' \(conv2d\): weight holds 27 values, "
                                         r"the layer needs 216"):
        plan.to_resident()
