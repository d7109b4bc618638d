// L2 set-aside and access-policy windows on captured kernel nodes (resident/cuda/l2_persistence).

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "gpu/support.hpp"
#include "resident/cuda/l2_persistence.hpp"

namespace resident::testing {
namespace {

__global__ void scale_kernel(const float* in, float* out, int n, float factor) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] * factor;
}

std::size_t persisting_limit() {
  std::size_t v = 0;
  EXPECT_EQ(cudaDeviceGetLimit(&v, cudaLimitPersistingL2CacheSize), cudaSuccess);
  return v;
}

TEST(l2_persistence, set_aside_is_clamped_granted_and_given_back) {
  RESIDENT_REQUIRE_GPU();
  int most = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, 0), cudaSuccess);
  const std::size_t before = persisting_limit();
  {
    l2_set_aside aside(std::size_t{1} << 20);
    if (most == 0) {
      EXPECT_EQ(aside.granted(), 0U);
    } else {
      EXPECT_GT(aside.granted(), 0U);
      EXPECT_LE(aside.granted(), static_cast<std::size_t>(most));
      EXPECT_EQ(persisting_limit(), aside.granted());
    }
    // Asking for more than the device has is clamped, not refused.
    l2_set_aside moved = std::move(aside);
    EXPECT_EQ(aside.granted(), 0U);  // NOLINT(bugprone-use-after-move): moved-from is empty
    l2_set_aside huge(std::size_t{1} << 40);
    EXPECT_LE(huge.granted(), static_cast<std::size_t>(most));
  }
  EXPECT_EQ(persisting_limit(), before);
}

TEST(l2_persistence, window_arguments_are_checked) {
  RESIDENT_REQUIRE_GPU();
  device_buffer buf(4096);
  EXPECT_THROW((void)persisting_window(nullptr, 4096), std::invalid_argument);
  EXPECT_THROW((void)persisting_window(buf.data(), 0), std::invalid_argument);
  int most = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&most, cudaDevAttrMaxAccessPolicyWindowSize, 0), cudaSuccess);
  EXPECT_THROW((void)persisting_window(buf.data(), static_cast<std::size_t>(most) + 1),
               std::invalid_argument);
  const cudaAccessPolicyWindow w = persisting_window(buf.data(), 4096);
  EXPECT_EQ(w.base_ptr, buf.data());
  EXPECT_EQ(w.num_bytes, 4096U);
  EXPECT_EQ(w.hitProp, cudaAccessPropertyPersisting);
  EXPECT_EQ(w.missProp, cudaAccessPropertyNormal);
  EXPECT_FLOAT_EQ(w.hitRatio, 1.0F);
}

TEST(l2_persistence, marks_only_the_kernel_just_captured_and_the_graph_still_computes) {
  RESIDENT_REQUIRE_GPU();
  constexpr int n = 1000;
  const std::vector<float> host = random_floats(n);
  device_buffer in(n * sizeof(float));
  device_buffer mid(n * sizeof(float));
  device_buffer out(n * sizeof(float));
  ASSERT_EQ(cudaMemcpy(in.data(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  l2_set_aside aside(n * sizeof(float));
  const cudaAccessPolicyWindow w = persisting_window(in.data(), n * sizeof(float));

  stream s;
  // Not capturing yet: refused.
  EXPECT_THROW((void)mark_captured_kernels(s.get(), w), std::logic_error);

  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  scale_kernel<<<(n + 255) / 256, 256, 0, s.get()>>>(in.data_as<float>(), mid.data_as<float>(), n,
                                                     2.0F);
  const int first = mark_captured_kernels(s.get(), w);
  ASSERT_EQ(
      cudaMemcpyAsync(out.data(), mid.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, s.get()),
      cudaSuccess);
  const int after_copy = mark_captured_kernels(s.get(), w);  // a memcpy node: nothing to mark
  scale_kernel<<<(n + 255) / 256, 256, 0, s.get()>>>(out.data_as<float>(), out.data_as<float>(), n,
                                                     0.5F);  // not marked
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(after_copy, 0);

  std::size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  int windowed = 0;
  int kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    if (type != cudaGraphNodeTypeKernel) continue;
    ++kernels;
    cudaLaunchAttributeValue v{};
    ASSERT_EQ(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeAccessPolicyWindow, &v),
              cudaSuccess);
    if (v.accessPolicyWindow.num_bytes == 0) continue;
    ++windowed;
    EXPECT_EQ(v.accessPolicyWindow.base_ptr, in.data());
    EXPECT_EQ(v.accessPolicyWindow.num_bytes, n * sizeof(float));
    EXPECT_EQ(v.accessPolicyWindow.hitProp, cudaAccessPropertyPersisting);
  }
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(windowed, 1);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  std::vector<float> got(n);
  ASSERT_EQ(cudaMemcpy(got.data(), out.data(), n * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], host[i] * 2.0F * 0.5F) << "element " << i;
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

}  // namespace
}  // namespace resident::testing
