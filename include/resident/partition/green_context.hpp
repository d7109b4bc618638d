#pragma once
// SM partitions: work submitted to a partition's streams runs on a limited share of the device's
// SMs. Two backends make them (split_options::backend):
//
//   green  green contexts (CUDA driver, sm_90 tested): the device's SMs are split into disjoint
//          sets, fixed when the partition is made. One process; no daemon. Not inside an MPS
//          client: there, a 16- and a 24-SM green context ran on SMs 0-15 and 0-23 (H200,
//          driver 580), no longer disjoint.
//   mps    MPS execution affinity: each partition is a context of its own, limited to a number
//          of SMs. The limit is a budget, not a set, and partitions share SMs: on the H200 every
//          MPS context of a process ran on the lowest-numbered SMs (two 16-SM partitions both
//          on SMs 0-15, alone and at once). Needs the MPS control daemon (mps_available says
//          whether this process can use it, and if not, why and how to start it).
//
// Memory is shared with the device's primary context in both: buffers allocated anywhere work
// in every partition (for MPS, tests/gpu/partition_test.cu checks device and host-mapped buffers
// of the primary context used by a partition's kernel, and a partition's buffer read and freed
// from the primary context).
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
#include <string_view>
#include <vector>

#include "resident/cuda/stream.hpp"

namespace resident::partition {

/// A driver call that failed, or a partition that cannot be made (names the call or the ask).
class partition_error : public std::runtime_error {
 public:
  explicit partition_error(const std::string& what) : std::runtime_error(what) {}
};

/// How a partition confines its work.
enum class partition_backend {
  green,  ///< green context: a fixed set of SMs, disjoint from the other partitions of its set
  mps,    ///< MPS execution affinity: a context limited to a number of SMs (a budget, not a set)
};
[[nodiscard]] std::string_view to_string(partition_backend backend) noexcept;
/// "green" or "mps"; throws std::invalid_argument naming the value and the choices.
[[nodiscard]] partition_backend parse_partition_backend(std::string_view name);

/// Whether this process can make MPS partitions on a device, and if not, why (the reason says how
/// to start the daemon). Initializes CUDA on the device; never throws.
struct mps_support {
  bool available{false};
  std::string reason;  ///< empty when available
  explicit operator bool() const noexcept { return available; }
};
[[nodiscard]] mps_support mps_available(int device = 0);

/// What the device offers for splitting into green contexts. `min_partition` and `alignment` are
/// the driver's figures for the chosen mode: with SM co-scheduling (the default) partitions keep
/// whole co-scheduled groups (8 SMs on the H200); ignoring it allows finer partitions at the cost
/// of features such as large thread-block clusters.
struct sm_resource_info {
  int device{};
  int sm_count{};
  int min_partition{};
  int alignment{};
  /// Groups of `alignment` SMs a split hands out: the most SMs partitions can hold together is
  /// whole_groups * alignment. On the H200 with co-scheduling, 15 (120 SMs); the other 12 SMs
  /// form no group, so sm_count / alignment (16) overstates it. 0: the driver did not say.
  int whole_groups{};
  bool ignore_coscheduling{false};
};
[[nodiscard]] sm_resource_info query_sm_resource(int device = 0, bool ignore_coscheduling = false);

/// One SM partition, green or MPS (backend()): an owning context. Move-only. The class keeps the
/// name of the backend it began with; every execution mode takes either kind.
class green_context {
 public:
  green_context(green_context&& other) noexcept;
  green_context& operator=(green_context&& other) noexcept;
  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  ~green_context();

  /// SMs this partition may use: green, the size of its set; MPS, the budget the driver granted
  /// (cuCtxGetExecAffinity; the ask rounded up to the driver's granularity, 2 on the H200).
  [[nodiscard]] int sm_count() const noexcept { return _sm_count; }
  [[nodiscard]] int device() const noexcept { return _device; }
  [[nodiscard]] int index() const noexcept { return _index; }
  [[nodiscard]] partition_backend backend() const noexcept { return _backend; }
  /// The CUcontext that stands for this partition in driver calls.
  [[nodiscard]] CUcontext context() const noexcept { return _context; }

  /// A non-blocking stream whose work runs only on this partition's SMs.
  [[nodiscard]] stream make_stream(int priority = 0) const;

  /// The SMs this partition runs on, as a bitmap (bit s of word s / 32 = SM s), found by
  /// running a probe kernel of many blocks inside it (the driver does not say which SMs a
  /// split handed out). Synchronous. For an MPS partition this is where one launch ran; another
  /// launch may run elsewhere.
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
  /// An MPS partition that owns no context yet (partition_set creates it in place).
  green_context(int device, int index) noexcept;
  void release() noexcept;

  partition_backend _backend{partition_backend::green};
  CUgreenCtx _green{};   // green only
  CUcontext _context{};  // green: the green context's view; MPS: owned
  int _sm_count{};
  int _device{};
  int _index{};
};

struct split_options {
  int device{0};
  /// Green only (MPS ignores it): finer partitions without SM co-scheduling.
  bool ignore_coscheduling{false};
  partition_backend backend{partition_backend::green};
  /// Green only: the last partition also takes every SM the earlier ones leave, the groups
  /// nobody asked for and the SMs that form no whole group (12 on the H200 with co-scheduling),
  /// so a set of two covers the device. The driver gives that remainder fewer guarantees (no
  /// large thread-block clusters there); for work that needs none, such as a best-effort
  /// partition beside a real-time one. The last partition's count is then a minimum.
  bool rest_to_last{false};
};

/// Partitions of one device, made in the order asked for. Green: disjoint SM sets. MPS: one
/// context per partition, each with an SM budget; the partitions share SMs (see the top of this
/// file), and split does not refuse budgets that add up to more than the device.
class partition_set {
 public:
  /// One partition per entry, each of at least that many SMs (the driver rounds up to its
  /// granularity; sm_count() says what each got). Throws partition_error when they do not fit
  /// (green), when one asks for more than the device has, or when MPS is not available (the
  /// message says how to start it).
  static std::shared_ptr<partition_set> split(const std::vector<int>& sm_counts,
                                              split_options o = {});

  [[nodiscard]] std::size_t size() const noexcept { return _parts.size(); }
  [[nodiscard]] const green_context& operator[](std::size_t i) const { return *_parts.at(i); }
  /// Partition i, sharing ownership of the whole set (what run_options::partition takes).
  [[nodiscard]] std::shared_ptr<const green_context> share(std::size_t i) const;
  /// Green: SMs no partition of the set holds. MPS: the device's SM count less the budgets
  /// granted, floored at 0; a budget count, not SMs that no partition will touch.
  [[nodiscard]] int remaining_sm_count() const noexcept { return _remaining; }
  /// The device's figures. For an MPS set, min_partition and alignment are 0: the driver rounds
  /// budgets to a granularity it does not report.
  [[nodiscard]] const sm_resource_info& info() const noexcept { return _info; }
  [[nodiscard]] partition_backend backend() const noexcept { return _backend; }

 private:
  partition_set() = default;
  static std::shared_ptr<partition_set> split_green(const std::vector<int>& sm_counts,
                                                    const split_options& o);
  static std::shared_ptr<partition_set> split_mps(const std::vector<int>& sm_counts,
                                                  const split_options& o);
  std::vector<std::unique_ptr<green_context>> _parts;
  std::weak_ptr<partition_set> _self;
  int _remaining{};
  sm_resource_info _info;
  partition_backend _backend{partition_backend::green};
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
