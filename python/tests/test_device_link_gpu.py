"""resident.DeviceLink on the GPU: a producer loop hands each sample to a consumer loop through
io.link_tx / io.link_rx with no host between them (both loops on device 0 here; two GPUs in the
C++ multi_gpu suite), in the GPU-resident modes, every output against a CPU reference and the
accounting exact. Skipped without a GPU."""

import array
import math

import pytest

import resident

ELEMENTS = 4096 + 3  # several of the producer's blocks share a publish in the graph modes
SCALE, OFFSET = 2.0, 1.0

pytestmark = pytest.mark.gpu


class Producer(resident.Application):
    """host -> mailbox -> link_tx."""

    def __init__(self, link):
        super().__init__("producer")
        self.link = link
        self.mailbox = resident.Mailbox(4 * ELEMENTS, 0, depth=4)

    def compose(self):
        rx = self.make_operator("io.mailbox_rx", "rx", mailbox=self.mailbox)
        tx = self.make_operator("io.link_tx", "link", link=self.link)
        self.register_data_ready_handler(self.mailbox.make_handler(rx))
        self.add_flow(rx, tx, [("sample", "in")])


class Consumer(resident.Application):
    """link_rx -> affine -> mailbox -> host."""

    def __init__(self, link):
        super().__init__("consumer")
        self.link = link
        self.mailbox = resident.Mailbox(8, 4 * ELEMENTS, depth=4)

    def compose(self):
        rx = self.make_operator("io.link_rx", "link", link=self.link)
        aff = self.make_operator("ops.affine", "affine", elements=ELEMENTS, scale=SCALE,
                                 offset=OFFSET)
        tx = self.make_operator("io.mailbox_tx", "tx", mailbox=self.mailbox)
        self.register_data_ready_handler(self.link.make_handler(rx))
        self.add_flow(rx, aff, [("sample", "in")])
        self.add_flow(aff, tx, [("out", "in")])


def sample(i):
    return array.array("f", [math.sin(0.003 * (i * ELEMENTS + k)) for k in range(ELEMENTS)])


@pytest.mark.parametrize("mode", ["while", "tail", "persistent"])
def test_a_link_hands_every_sample_over_in_lockstep(mode):
    link = resident.DeviceLink(4 * ELEMENTS, depth=4)
    assert (link.bytes, link.depth, link.producer_device, link.consumer_device) == (
        4 * ELEMENTS, 4, 0, 0)
    producer, consumer = Producer(link), Consumer(link)
    options = dict(policy="every", persistent_blocks=2)
    stamp = resident.OutputStamp()
    with consumer.run(mode, **options) as c, producer.run(mode, **options) as p:
        for i in range(10):
            x = sample(i)  # each sample differs, so a stale slot shows
            producer.mailbox.publish(x)
            stamp, payload = consumer.mailbox.wait_output(stamp, timeout=5.0)
            got = array.array("f", payload)
            for k in (0, 1, ELEMENTS // 2, ELEMENTS - 1):
                assert math.isclose(got[k], SCALE * x[k] + OFFSET, rel_tol=1e-6, abs_tol=1e-6), (
                    i, k)
            assert all(math.isclose(g, SCALE * v + OFFSET, rel_tol=1e-6, abs_tol=1e-6)
                       for g, v in zip(got, x)), i
    assert p.report.stopped and c.report.stopped, (p.report.error, c.report.error)
    assert p.report.counters.processed == 10
    assert link.published == 10
    assert c.report.counters.processed + c.report.counters.dropped == link.published
    assert c.report.counters.processed == 10


@pytest.mark.parametrize("mode", ["host-graph", "while", "tail"])
def test_run_together_sets_both_loops_up_then_launches_the_consumer_first(mode):
    link = resident.DeviceLink(4 * ELEMENTS, depth=4)
    producer, consumer = Producer(link), Consumer(link)
    options = dict(policy="every")
    c, p = resident.run_together((consumer, mode, options), (producer, mode, options))
    assert (c.mode, p.mode) == (mode, mode)
    stamp = resident.OutputStamp()
    with c, p:  # the producer torn down first
        for i in range(10):
            x = sample(i)
            producer.mailbox.publish(x)
            stamp, payload = consumer.mailbox.wait_output(stamp, timeout=5.0)
            got = array.array("f", payload)
            assert all(math.isclose(g, SCALE * v + OFFSET, rel_tol=1e-6, abs_tol=1e-6)
                       for g, v in zip(got, x)), i
    assert p.report.stopped and c.report.stopped, (p.report.error, c.report.error)
    assert p.report.counters.processed == 10
    assert (c.report.counters.processed, c.report.counters.dropped) == (10, 0)
    # Both applications are free again: they run together again. (Not run() one after the
    # other: producer.run() frees the producer's first run, and in a GPU-resident mode that free
    # waits for the device to go idle, which the consumer's new loop never lets it do.)
    c, p = resident.run_together((consumer, mode, options), (producer, mode, options))
    with c, p:
        assert (c.mode, p.mode) == (mode, mode)
    assert p.report.stopped and c.report.stopped, (p.report.error, c.report.error)


def test_a_link_for_a_device_the_machine_lacks_is_refused_by_name():
    missing = resident.device_count()
    with pytest.raises(resident.CompositionError, match=f"consumer_device {missing} does not"):
        resident.DeviceLink(64, consumer_device=missing)
    with pytest.raises(resident.CompositionError, match="depth must be 2 to 4096"):
        resident.DeviceLink(64, depth=1)
