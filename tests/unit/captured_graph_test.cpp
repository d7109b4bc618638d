// ops::captured_graph's argument checks, which need no GPU (the graph itself is checked on one:
// tests/gpu/captured_graph_test.cpp), and the node rules of each kind of graph.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

#include "resident/ops/captured_graph.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;

// Never dereferenced: setup() refuses these operators before it touches the graph or memory.
std::array<float, 64> memory{};
constexpr std::size_t bytes = 16 * sizeof(float);

std::string setup_error(ops::graph_ports ports, cudaGraph_t g = nullptr) {
  test_app app([&](test_app& a) { (void)a.make_operator<ops::captured_graph>("gemm", g, ports); });
  return plan_error(app);
}

ops::graph_ports one_in_one_out() {
  return {.inputs = {{"a", memory.data(), bytes}}, .outputs = {{"c", memory.data() + 32, bytes}}};
}

TEST(captured_graph, refuses_a_null_graph) {
  EXPECT_THAT(setup_error(one_in_one_out()),
              HasSubstr("operator 'gemm' (captured_graph): the graph is null"));
}

TEST(captured_graph, refuses_a_port_of_zero_bytes) {
  auto ports = one_in_one_out();
  ports.inputs[0].bytes = 0;
  EXPECT_THAT(setup_error(ports),
              HasSubstr("operator 'gemm': device_input(\"a\") has size 0 bytes"));
  ports = one_in_one_out();
  ports.outputs[0].bytes = 0;
  EXPECT_THAT(setup_error(ports),
              HasSubstr("operator 'gemm': device_output(\"c\") has size 0 bytes"));
}

TEST(captured_graph, refuses_a_port_without_memory) {
  auto ports = one_in_one_out();
  ports.inputs[0].memory = nullptr;
  EXPECT_THAT(setup_error(ports), HasSubstr("operator 'gemm' (captured_graph): input 'a' has no "
                                            "memory; give the device pointer the graph reads"));
  ports = one_in_one_out();
  ports.outputs[0].memory = nullptr;
  EXPECT_THAT(setup_error(ports), HasSubstr("output 'c' has no memory"));
}

TEST(captured_graph, refuses_unnamed_and_twice_named_ports) {
  auto ports = one_in_one_out();
  ports.inputs[0].name.clear();
  EXPECT_THAT(setup_error(ports), HasSubstr("operator 'gemm': device_input needs a name"));
  EXPECT_THAT(setup_error({.inputs = {{"a", memory.data(), bytes}},
                           .outputs = {{"a", memory.data() + 32, bytes}}}),
              HasSubstr("operator 'gemm': port 'a' is declared twice"));
}

TEST(captured_graph, refuses_inputs_that_overlap_in_memory) {
  auto ports = one_in_one_out();
  ports.inputs.push_back({"b", memory.data() + 8, bytes});  // a's second half
  EXPECT_THAT(setup_error(ports), HasSubstr("inputs 'a' and 'b' overlap in memory"));
}

TEST(captured_graph, lets_an_output_share_an_input_s_memory) {
  // A graph that works in place reads and writes one buffer: only the graph check is left.
  auto ports = one_in_one_out();
  ports.outputs[0].memory = ports.inputs[0].memory;
  EXPECT_THAT(setup_error(ports), HasSubstr("the graph is null"));
}

TEST(graph_kind, conditional_bodies_and_device_graphs_refuse_host_and_event_nodes) {
  for (const auto kind : {graph_kind::conditional_body, graph_kind::device_launched}) {
    for (const auto type : {cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemcpy,
                            cudaGraphNodeTypeMemset, cudaGraphNodeTypeGraph}) {
      EXPECT_TRUE(graph_kind_allows(kind, type)) << node_type_name(type);
    }
    for (const auto type : {cudaGraphNodeTypeHost, cudaGraphNodeTypeEventRecord,
                            cudaGraphNodeTypeWaitEvent, cudaGraphNodeTypeMemAlloc,
                            cudaGraphNodeTypeMemFree, cudaGraphNodeTypeExtSemaphoreSignal}) {
      EXPECT_FALSE(graph_kind_allows(kind, type)) << node_type_name(type);
    }
  }
  EXPECT_TRUE(graph_kind_allows(graph_kind::conditional_body, cudaGraphNodeTypeEmpty));
  EXPECT_FALSE(graph_kind_allows(graph_kind::device_launched, cudaGraphNodeTypeEmpty));
  EXPECT_TRUE(graph_kind_allows(graph_kind::host_launched, cudaGraphNodeTypeHost));
  EXPECT_THAT(allowed_node_types_text(graph_kind::device_launched),
              HasSubstr("only kernel, memcpy, memset and child-graph nodes"));
}

}  // namespace
}  // namespace resident::test
