#pragma once
// SM partitions through green contexts (CUDA driver, sm_90 tested): the device's SMs are split
// into disjoint groups, and work submitted to a partition's streams runs only on its SMs.
// Memory stays shared with the device's primary context, so buffers allocated anywhere work in
// every partition.
//
//   auto parts = resident::partition::partition_set::split({16, 16, 32});
//   run_options o;  o.partition = parts.share(0);   // a loop confined to 16 SMs
//
// The driver is reached through cudaGetDriverEntryPointByVersion: nothing links libcuda.

#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/cuda/stream.hpp"

namespace resident::partition {

/// A driver call that failed, or a partition that cannot be made (names the call or the ask).
class partition_error : public std::runtime_error {
 public:
  explicit partition_error(const std::string& what) : std::runtime_error(what) {}
};

/// What the device offers for splitting. `min_partition` and `alignment` are the driver's
/// figures for the chosen mode: with SM co-scheduling (the default) partitions keep whole
/// co-scheduled groups (8 SMs on the H200); ignoring it allows finer partitions at the cost
/// of features such as large thread-block clusters.
struct sm_resource_info {
  int device{};
  int sm_count{};
  int min_partition{};
  int alignment{};
  bool ignore_coscheduling{false};
};
[[nodiscard]] sm_resource_info query_sm_resource(int device = 0, bool ignore_coscheduling = false);

/// One SM partition: an owning green context. Move-only.
class green_context {
 public:
  green_context(green_context&& other) noexcept;
  green_context& operator=(green_context&& other) noexcept;
  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  ~green_context();

  [[nodiscard]] int sm_count() const noexcept { return _sm_count; }
  [[nodiscard]] int device() const noexcept { return _device; }
  [[nodiscard]] int index() const noexcept { return _index; }
  /// The CUcontext that stands for this partition in driver calls.
  [[nodiscard]] CUcontext context() const noexcept { return _context; }

  /// A non-blocking stream whose work runs only on this partition's SMs.
  [[nodiscard]] stream make_stream(int priority = 0) const;

  /// The SMs this partition runs on, as a bitmap (bit s of word s / 32 = SM s), found by
  /// running a probe kernel of many blocks inside it (the driver does not say which SMs a
  /// split handed out). Synchronous.
  [[nodiscard]] std::array<std::uint32_t, 8> sm_mask() const;

  /// Makes this partition the calling thread's current context until destroyed (then restores
  /// the previous one). Runtime calls that use the current context (kernel launches with the
  /// runtime API, conditional handles) then belong to the partition.
  class current_scope {
   public:
    explicit current_scope(const green_context* partition);  // nullptr: does nothing
    current_scope(const current_scope&) = delete;
    current_scope& operator=(const current_scope&) = delete;
    ~current_scope();

   private:
    CUcontext _previous{};
    bool _active{false};
  };

 private:
  friend class partition_set;
  green_context(CUgreenCtx ctx, int sm_count, int device, int index);

  CUgreenCtx _green{};
  CUcontext _context{};
  int _sm_count{};
  int _device{};
  int _index{};
};

struct split_options {
  int device{0};
  bool ignore_coscheduling{false};
};

/// Disjoint partitions of one device, carved in the order asked for.
class partition_set {
 public:
  /// One partition per entry, each of at least that many SMs (the driver rounds up to its
  /// alignment; sm_count() says what each got). Throws partition_error when they do not fit.
  static std::shared_ptr<partition_set> split(const std::vector<int>& sm_counts,
                                              split_options o = {});

  [[nodiscard]] std::size_t size() const noexcept { return _parts.size(); }
  [[nodiscard]] const green_context& operator[](std::size_t i) const { return *_parts.at(i); }
  /// Partition i, sharing ownership of the whole set (what run_options::partition takes).
  [[nodiscard]] std::shared_ptr<const green_context> share(std::size_t i) const;
  [[nodiscard]] int remaining_sm_count() const noexcept { return _remaining; }
  [[nodiscard]] const sm_resource_info& info() const noexcept { return _info; }

 private:
  partition_set() = default;
  std::vector<std::unique_ptr<green_context>> _parts;
  std::weak_ptr<partition_set> _self;
  int _remaining{};
  sm_resource_info _info;
};

/// A conditional-node handle for `graph` whose body kernels belong to `partition` (nullptr: the
/// current context, as cudaGraphConditionalHandleCreate does).
[[nodiscard]] cudaGraphConditionalHandle make_conditional_handle(cudaGraph_t graph,
                                                                 const green_context* partition,
                                                                 unsigned default_value,
                                                                 unsigned flags);

/// Adds a conditional node (one body) after `deps` whose body runs in `partition`'s context;
/// returns the body graph. The runtime's cudaGraphAddNode cannot name a context, and a
/// conditional node's context must match its handle's and its body kernels'.
[[nodiscard]] cudaGraph_t add_conditional_node(cudaGraph_t graph,
                                               const std::vector<cudaGraphNode_t>& deps,
                                               cudaGraphConditionalHandle handle,
                                               cudaGraphConditionalNodeType type,
                                               const green_context& partition);

}  // namespace resident::partition
