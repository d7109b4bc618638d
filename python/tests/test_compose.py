"""Composing applications from Python: operators, flows, plans, DOT, parameters, YAML config and
the C++ errors as Python exceptions. CPU only."""

import pytest

import resident

ELEMENTS = 16


class Chain(resident.Application):
    """external_source -> affine -> square: composable without a GPU."""

    def __init__(self, name="chain", ports=None, **affine_params):
        super().__init__(name)
        self.ports = ports
        self.affine_params = affine_params

    def compose(self):
        src = self.make_operator("ops.external_source", "src", bytes=4 * ELEMENTS)
        aff = self.make_operator("ops.affine", "affine", elements=ELEMENTS, **self.affine_params)
        sq = self.make_operator("ops.square", "square", elements=ELEMENTS)
        self.add_flow(src, aff)
        self.add_flow(aff, sq, self.ports if self.ports is not None else [("out", "in")])


def test_compose_plan_and_operators():
    app = Chain()
    plan = app.plan()
    assert plan.body_order == ("src", "affine", "square")
    assert plan.handler_order == ()
    assert [b.producer for b in plan.buffers] == ["src.out", "affine.out", "square.out"]
    assert plan.buffers[0].consumers == ("affine.in",)
    assert plan.runtime_bytes == 3 * 4 * ELEMENTS
    names = [op.name for op in app.operators]
    assert names == ["src", "affine", "square"]
    affine = app.find_operator("affine")
    assert affine.inputs == ["in"] and affine.outputs == ["out"]
    assert affine.port_bytes("out") == 4 * ELEMENTS
    assert [p[0] for p in affine.parameters] == ["elements", "scale", "offset"]


def test_ports_as_dict():
    assert Chain(ports={"out": "in"}).plan().body_order == ("src", "affine", "square")


@pytest.mark.parametrize("ports", [["out"], [("out", "in", "x")], [3]])
def test_ports_of_the_wrong_shape_raise_type_error(ports):
    with pytest.raises(TypeError, match="pairs"):
        Chain(ports=ports).plan()


def test_number_like_parameters():
    class Half:  # as numpy.float32 is: a number, not a float
        def __float__(self):
            return 0.5

    class Sixteen:  # as numpy.int64 is: an index, not an int
        def __index__(self):
            return ELEMENTS

    class Ports(Chain):
        def compose(self):
            src = self.make_operator("ops.external_source", "src", bytes=4 * ELEMENTS)
            aff = self.make_operator("ops.affine", "affine", elements=Sixteen(), scale=Half())
            self.add_flow(src, aff)

    assert Ports().plan().body_order == ("src", "affine")


def test_dot_names_every_operator():
    dot = Chain("dotted").to_dot()
    assert dot.startswith('digraph "dotted"')
    for name in ("src", "affine", "square"):
        assert f'"{name}"' in dot
    assert '"affine" -> "square"' in dot


def test_dot_says_which_capture_order():
    class Fork(resident.Application):
        def compose(self):
            src = self.make_operator("ops.external_source", "src", bytes=4 * ELEMENTS)
            aff = self.make_operator("ops.affine", "affine", elements=ELEMENTS)
            sq = self.make_operator("ops.square", "square", elements=ELEMENTS)
            self.add_flow(src, aff)
            self.add_flow(src, sq)

    assert "on one stream" in Fork("fork").to_dot()
    forked = Fork("fork").to_dot(capture="forked")
    assert "forked stream" in forked
    assert '"#3 square (s1)"' in forked
    with pytest.raises(ValueError, match="capture order 'sideways'"):
        Fork("fork").to_dot(capture="sideways")


def test_bad_flow_names_both_ports():
    with pytest.raises(resident.CompositionError) as info:
        Chain(ports={"outt": "in"}).plan()
    message = str(info.value)
    assert "affine.outt -> square.in" in message
    assert "no output port 'outt'" in message
    assert isinstance(info.value, ValueError)


def test_misspelled_parameter_raises_naming_it():
    with pytest.raises(resident.CompositionError, match="no parameter 'scael'"):
        Chain(scael=3.0).plan()


def test_parameter_of_the_wrong_type():
    with pytest.raises(TypeError, match="parameter 'scale' is a list"):
        Chain(scale=[1.0]).plan()


def test_unknown_kind_lists_the_kinds():
    class Unknown(resident.Application):
        def compose(self):
            self.make_operator("ops.nope", "x")

    with pytest.raises(resident.CompositionError, match="unknown operator kind 'ops.nope'"):
        Unknown().plan()
    assert "ops.affine" in resident.operator_kinds()
    assert "io.mailbox_rx" in resident.operator_kinds()


def test_operator_catalog_is_the_one_list_of_kinds():
    catalog = resident.operator_catalog()
    kinds = [k["kind"] for k in catalog]
    assert kinds == sorted(set(kinds)) == resident.operator_kinds()
    by_kind = {k["kind"]: k for k in catalog}
    affine = by_kind["ops.affine"]
    assert affine["device_form"] and affine["input"] == "none" and affine["summary"]
    assert [p[0] for p in affine["parameters"]] == ["elements", "scale", "offset"]
    assert by_kind["io.mailbox_rx"]["input"] == "mailbox" and by_kind["io.mailbox_rx"]["device_form"]
    assert not by_kind["ops.captured_graph"]["device_form"]
    assert by_kind["ops.external_source"]["input"] == "memory"


def test_make_operator_outside_compose():
    with pytest.raises(resident.CompositionError, match="inside compose"):
        Chain().make_operator("ops.affine", "late")


def test_mailbox_operators_need_a_mailbox():
    class NoMailbox(resident.Application):
        def compose(self):
            self.make_operator("io.mailbox_rx", "rx")

    with pytest.raises(TypeError, match="mailbox="):
        NoMailbox().plan()


def test_link_operators_need_a_device_link():
    class NoLink(resident.Application):
        def __init__(self, kind, **kw):
            super().__init__("no_link")
            self.kind, self.kw = kind, kw

        def compose(self):
            self.make_operator(self.kind, "link", **self.kw)

    for kind in ("io.link_rx", "io.link_tx"):
        with pytest.raises(TypeError, match="needs link=<resident.DeviceLink>"):
            NoLink(kind).plan()
        with pytest.raises(TypeError, match="link= takes a resident.DeviceLink"):
            NoLink(kind, link="device 1").plan()
    by_kind = {k["kind"]: k for k in resident.operator_catalog()}
    for kind in ("io.link_rx", "io.link_tx"):
        assert by_kind[kind]["input"] == "device link" and by_kind[kind]["device_form"]


def test_compose_not_overridden():
    with pytest.raises(NotImplementedError):
        resident.Application("bare").plan()


def test_python_error_in_compose_propagates():
    class Failing(resident.Application):
        def compose(self):
            raise KeyError("from compose")

    with pytest.raises(KeyError, match="from compose"):
        Failing().plan()


def test_config_text_overrides_a_parameter():
    app = Chain()
    app.load_config_text("affine:\n  elements: 8\n")  # the file wins over the code's 16
    with pytest.raises(resident.CompositionError, match="output is 64 bytes, input expects 32"):
        app.plan()  # 8 floats no longer match the source's 64 bytes: the override took effect


def test_config_file_overrides_a_parameter(tmp_path):
    path = tmp_path / "app.yaml"
    path.write_text("affine:\n  scale: 5.0\n  offset: -1\n")
    app = Chain()
    app.load_config(path)
    assert app.plan().body_order == ("src", "affine", "square")


def test_config_wrong_key_raises_config_error_with_file_and_line():
    app = Chain()
    app.load_config_text("affine:\n  scale: 2.0\n  scael: 5.0\n", "app.yaml")
    with pytest.raises(resident.ConfigError, match=r"no parameter 'scael' \(from app\.yaml:3"):
        app.plan()


def test_config_unknown_operator():
    app = Chain()
    app.load_config_text("affline:\n  scale: 5.0\n", "app.yaml")
    with pytest.raises(resident.ConfigError, match="app.yaml:1.*'affline'"):
        app.plan()


def test_missing_config_file_is_config_error(tmp_path):
    with pytest.raises(resident.ConfigError):
        Chain().load_config(tmp_path / "missing.yaml")


def test_exception_hierarchy():
    assert issubclass(resident.CompositionError, ValueError)
    assert issubclass(resident.ConfigError, resident.CompositionError)
    assert issubclass(resident.ExecutionError, RuntimeError)
    assert issubclass(resident.CudaError, RuntimeError)
    assert resident.CompositionError.__module__ == "resident"


class Camera(resident.Application):
    """The camera pipeline's imaging chain behind a byte-sized source: composable on the CPU."""

    def compose(self):
        w, h = 64, 48
        src = self.make_operator("ops.external_source", "src", bytes=w * h * 2)
        isp = self.make_operator("imaging.raw_isp", "isp", width=w, height=h)
        dem = self.make_operator("imaging.demosaic", "demosaic", width=w, height=h)
        cvt = self.make_operator("imaging.convert_resize", "resize", in_width=w, in_height=h,
                                 out_width=32, out_height=32)
        self.add_flow(src, isp)
        self.add_flow(isp, dem, {"out": "bayer"})
        self.add_flow(dem, cvt, {"rgb": "in"})


def test_imaging_operators_compose():
    plan = Camera("camera").plan()
    assert plan.body_order == ("src", "isp", "demosaic", "resize")
    assert plan.buffers[-1].bytes == 32 * 32 * 3 * 4  # planar float RGB


def test_mailbox_must_be_a_mailbox():
    class WrongMailbox(resident.Application):
        def compose(self):
            self.make_operator("io.mailbox_tx", "tx", mailbox="not one")

    with pytest.raises(TypeError, match="takes a resident.Mailbox"):
        WrongMailbox().plan()


def test_the_no_gpu_note_says_what_the_cli_says_and_what_still_works():
    note = resident._resident._no_gpu_note(
        "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
    assert "no usable CUDA GPU or driver was found" in note
    assert "when no NVIDIA driver is installed or loaded" in note
    for still in ("Application.plan()", "resident.operator_catalog()", "resident report"):
        assert still in note
    assert "NVIDIA driver is installed" not in resident._resident._no_gpu_note(
        "cudaErrorNoDevice: no CUDA-capable device is detected")


def test_a_cuda_error_carries_the_no_gpu_note_only_without_a_gpu():
    # Pinned host memory needs a driver: without one the CudaError explains; with one the
    # mailbox is made and nothing is raised.
    if resident.device_count() == 0:
        with pytest.raises(resident.CudaError, match="no usable CUDA GPU or driver.*Application"):
            resident.Mailbox(16, 16)
    else:
        assert resident.Mailbox(16, 16) is not None
