"""ops.captured_graph from Python: the argument errors, found before the graph is touched. CPU
only (tests/gpu/captured_graph_test.cpp runs captured graphs)."""

import pytest

import resident

A = 0x7F0000000000  # never dereferenced: every case here is refused before the graph is read
BYTES = 256


class OneGraph(resident.Application):
    def __init__(self, graph=0, inputs=(("a", A, BYTES),), outputs=(("c", A + BYTES, BYTES),),
                 raw=None):
        super().__init__("one_graph")
        self.graph, self.inputs, self.outputs, self.raw = graph, inputs, outputs, raw

    def compose(self):
        if self.raw is not None:
            self.make_operator("ops.captured_graph", "g", **self.raw)
        else:
            self.make_captured_graph("g", self.graph, self.inputs, self.outputs)


def test_the_kind_is_known():
    assert "ops.captured_graph" in resident.operator_kinds()


def test_a_null_graph_is_refused_naming_the_operator():
    with pytest.raises(resident.CompositionError,
                       match=r"operator 'g' \(captured_graph\): the graph is null"):
        OneGraph(graph=0).plan()


def test_a_port_of_zero_bytes_is_refused():
    with pytest.raises(resident.CompositionError, match=r'device_input\("a"\) has size 0 bytes'):
        OneGraph(inputs=[("a", A, 0)]).plan()


def test_a_port_without_memory_is_refused():
    with pytest.raises(resident.CompositionError, match="output 'c' has no memory"):
        OneGraph(outputs=[("c", 0, BYTES)]).plan()


def test_a_port_named_twice_is_refused():
    with pytest.raises(resident.CompositionError, match="port 'a' is declared twice"):
        OneGraph(outputs=[("a", A + BYTES, BYTES)]).plan()


@pytest.mark.parametrize("ports", [[("a", A)], ["a"], [(1, A, BYTES)], [("a", "0x10", BYTES)],
                                   "a"])
def test_ports_of_the_wrong_shape_raise_type_error(ports):
    with pytest.raises(TypeError, match=r"\(name, device pointer, bytes\)"):
        OneGraph(inputs=ports).plan()


@pytest.mark.parametrize("raw", [{}, {"graph": "0x10"}, {"graph": 1.5}])
def test_the_graph_must_be_an_int_handle(raw):
    with pytest.raises(TypeError, match=r"needs graph=<cudaGraph_t as an int>"):
        OneGraph(raw=raw).plan()
