#pragma once
// Kernel-node parameters that own their argument values, for building or updating graph kernel
// nodes by hand (cudaGraphExecKernelNodeSetParams) without re-capturing.

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace resident {

/// cudaKernelNodeParams plus storage for the argument values it points to. Move-only; the
/// argument pointers stay valid across moves (the storage lives on the heap).
template <class... Args>
class kernel_node_params {
  static_assert((std::is_trivially_copyable_v<Args> && ...),
                "kernel arguments are passed by value and must be trivially copyable");

 public:
  kernel_node_params(void (*kernel)(Args...), dim3 grid, dim3 block, unsigned shared_bytes,
                     Args... args)
      : _storage(std::make_unique<storage>(storage{{args...}, {}})) {
    fill_pointers(std::index_sequence_for<Args...>{});
    _params.func = reinterpret_cast<void*>(kernel);
    _params.gridDim = grid;
    _params.blockDim = block;
    _params.sharedMemBytes = shared_bytes;
    _params.kernelParams = _storage->pointers.data();
    _params.extra = nullptr;
  }

  [[nodiscard]] const cudaKernelNodeParams& get() const noexcept { return _params; }

 private:
  struct storage {
    std::tuple<Args...> values;
    std::array<void*, sizeof...(Args)> pointers;
  };
  template <std::size_t... I>
  void fill_pointers(std::index_sequence<I...>) {
    ((_storage->pointers[I] = static_cast<void*>(&std::get<I>(_storage->values))), ...);
  }

  std::unique_ptr<storage> _storage;
  cudaKernelNodeParams _params{};
};

}  // namespace resident
