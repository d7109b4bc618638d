"""The camera pipeline from Python: the emulated sensor bridge and display as endpoints, the
imaging operators between them. Composition errors run everywhere; the loop needs a GPU."""

import time

import pytest

import resident


def test_the_camera_operators_are_kinds():
    kinds = resident.operator_kinds()
    for kind in ("io.frame_rx", "io.display_tx", "imaging.csi2_reconstruct", "imaging.raw_isp",
                 "imaging.demosaic"):
        assert kind in kinds


def test_frame_rx_needs_a_bridge_and_display_tx_a_display():
    app = resident.Application("camera")
    with pytest.raises(TypeError, match=r'make_operator\("io.frame_rx"\): needs bridge='):
        app.make_operator("io.frame_rx", "rx")
    with pytest.raises(TypeError, match=r'display= takes a resident.Display'):
        app.make_operator("io.display_tx", "display", display=object())


def test_a_bad_choice_names_the_options():
    with pytest.raises(ValueError, match="sync is 'smooth'; one of fixed, variable"):
        resident.Display(sync="smooth")


class CameraApp(resident.Application):
    """frame_rx -> csi2_reconstruct -> raw_isp -> demosaic -> display_tx."""

    def __init__(self, bridge, display, width, height):
        super().__init__("camera")
        self.bridge, self.display, self.size = bridge, display, dict(width=width, height=height)

    def compose(self):
        rx = self.make_operator("io.frame_rx", "rx", bridge=self.bridge)
        rec = self.make_operator("imaging.csi2_reconstruct", "reconstruct", **self.size)
        isp = self.make_operator("imaging.raw_isp", "isp", **self.size)
        dem = self.make_operator("imaging.demosaic", "demosaic", **self.size)
        tx = self.make_operator("io.display_tx", "display", display=self.display)
        self.register_data_ready_handler(self.bridge.make_handler(rx))
        self.add_flow(rx, rec, [("frame", "frame")])
        self.add_flow(rec, isp, [("bayer", "in")])
        self.add_flow(isp, dem, [("out", "bayer")])
        self.add_flow(dem, tx, [("rgb", "rgb")])
        self.add_flow(rec, tx, [("integrity", "integrity")])


def card(width, height):
    return bytearray(((x * 255 // width) if c == 0 else (y * 255 // height) if c == 1 else 90)
                     for y in range(height) for x in range(width) for c in range(3))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["eager", "host-graph", "while", "tail", "persistent"])
def test_frames_reach_the_display_in_every_mode(mode):
    width, height = 256, 128
    photo = memoryview(card(64, 48)).cast("B", (48, 64, 3))
    bridge = resident.SensorBridge(photo, width=width, height=height, rate_hz=500.0)
    display = resident.Display(width=width, height=height)
    app = CameraApp(bridge, display, width, height)
    display.start()
    bridge.start()
    try:
        options = dict(poll_ns=2_000_000 if mode in ("while", "tail", "persistent") else 0)
        if mode == "persistent":
            # A grid of 8 blocks: the device forms spread over it, and SMs stay free for the
            # bridge's commit kernel (docs/design.md, "persistent mode").
            options["persistent_blocks"] = 8
        with app.run(mode, **options) as run:
            deadline = time.monotonic() + 10
            while run.counters().processed < 30 and time.monotonic() < deadline:
                time.sleep(0.005)
            bridge.stop()
            time.sleep(0.02)
            report = run.tear_down()
    finally:
        bridge.stop()
        display.stop()
    counters = report.counters
    assert counters.processed >= 30
    assert counters.processed + counters.dropped == counters.last_seq - counters.start_seq
    written = display.counters()
    assert written["frames_written"] + written["corrupt_frames"] == counters.processed
    assert written["corrupt_frames"] == 0
    assert written["rewritten_frames"] == 0
    assert len(display.copy_front()) == width * height * 4
