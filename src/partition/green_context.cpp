#include "resident/partition/green_context.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "partition/driver.hpp"
#include "resident/cuda/error.hpp"

namespace resident::partition {

std::string_view to_string(partition_backend backend) noexcept {
  switch (backend) {
    case partition_backend::green:
      return "green";
    case partition_backend::mps:
      return "mps";
  }
  return "unknown";
}

partition_backend parse_partition_backend(std::string_view name) {
  if (name == "green") return partition_backend::green;
  if (name == "mps") return partition_backend::mps;
  throw std::invalid_argument("unknown partition backend '" + std::string(name) +
                              "'; backends: green (green contexts: disjoint SM sets), mps (MPS "
                              "execution affinity: SM budgets, needs the MPS daemon)");
}

namespace {

CUdevResource device_sms(CUdevice dev) {
  CUdevResource all{};
  RESIDENT_CU_TRY(detail::driver().device_get_dev_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  return all;
}

unsigned split_flags(bool ignore_coscheduling) {
  return ignore_coscheduling
             ? static_cast<unsigned>(CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)
             : 0U;
}

// One group of at least `count` SMs from `input`; nbGroups 0 means it did not fit.
bool split_one(const CUdevResource& input, unsigned count, unsigned flags, CUdevResource& group,
               CUdevResource& rest) {
  unsigned groups = 1;
  const CUresult r =
      detail::driver().dev_sm_resource_split_by_count(&group, &groups, &input, &rest, flags, count);
  if (r == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION || r == CUDA_ERROR_INVALID_VALUE) {
    return false;
  }
  RESIDENT_CU_TRY(r);
  return groups == 1;
}

// Splits `all` into as many groups of `unit` SMs as the driver gives (pieces resized to them):
// the one split partition_set::split combines partitions from, and how whole_groups is counted.
// `rest`, when given, receives the SMs in no whole group (the split's remainder).
CUresult split_into_groups(const CUdevResource& all, int unit, unsigned flags,
                           std::vector<CUdevResource>& pieces, CUdevResource* rest_out = nullptr) {
  unsigned groups = static_cast<unsigned>(static_cast<int>(all.sm.smCount) / unit);
  pieces.assign(groups, CUdevResource{});
  if (groups == 0) return CUDA_SUCCESS;
  CUdevResource rest{};
  const CUresult r = detail::driver().dev_sm_resource_split_by_count(
      pieces.data(), &groups, &all, &rest, flags, static_cast<unsigned>(unit));
  pieces.resize(r == CUDA_SUCCESS ? groups : 0U);
  if (rest_out != nullptr && r == CUDA_SUCCESS) *rest_out = rest;
  return r;
}

}  // namespace

sm_resource_info query_sm_resource(int device, bool ignore_coscheduling) {
  const CUdevResource all = device_sms(detail::device_handle(device));
  sm_resource_info info;
  info.device = device;
  info.sm_count = static_cast<int>(all.sm.smCount);
  info.min_partition = static_cast<int>(all.sm.minSmPartitionSize);
  info.alignment = static_cast<int>(all.sm.smCoscheduledAlignment);
  info.ignore_coscheduling = ignore_coscheduling;
  if (ignore_coscheduling) {
    // The driver reports the co-scheduled figures; the finer ones show in what a split gives.
    CUdevResource group{};
    CUdevResource rest{};
    const unsigned flags = split_flags(true);
    if (split_one(all, 1, flags, group, rest)) {
      info.min_partition = static_cast<int>(group.sm.smCount);
      CUdevResource next{};
      if (split_one(all, group.sm.smCount + 1, flags, next, rest)) {
        info.alignment = static_cast<int>(next.sm.smCount - group.sm.smCount);
      }
    }
  }
  // How many groups of the alignment a split gives. A driver that refuses the query (0 stays)
  // leaves callers to fall back on sm_count / alignment.
  std::vector<CUdevResource> pieces;
  if (split_into_groups(all, std::max(1, info.alignment), split_flags(ignore_coscheduling),
                        pieces) == CUDA_SUCCESS) {
    info.whole_groups = static_cast<int>(pieces.size());
  }
  return info;
}

green_context::green_context(CUgreenCtx ctx, int sm_count, int device, int index)
    : _green(ctx), _sm_count(sm_count), _device(device), _index(index) {
  const CUresult r = detail::driver().ctx_from_green_ctx(&_context, _green);
  if (r != CUDA_SUCCESS) release();  // a throwing constructor runs no destructor
  RESIDENT_CU_TRY(r);
}

green_context::green_context(int device, int index) noexcept
    : _backend(partition_backend::mps), _device(device), _index(index) {}

green_context::green_context(green_context&& other) noexcept
    : _backend(other._backend),
      _green(std::exchange(other._green, nullptr)),
      _context(std::exchange(other._context, nullptr)),
      _sm_count(other._sm_count),
      _device(other._device),
      _index(other._index) {}

green_context& green_context::operator=(green_context&& other) noexcept {
  if (this != &other) {
    release();
    _backend = other._backend;
    _green = std::exchange(other._green, nullptr);
    _context = std::exchange(other._context, nullptr);
    _sm_count = other._sm_count;
    _device = other._device;
    _index = other._index;
  }
  return *this;
}

green_context::~green_context() { release(); }

void green_context::release() noexcept {
  CUresult r = CUDA_SUCCESS;
  if (_green != nullptr) {
    r = detail::driver().green_ctx_destroy(_green);  // the context view goes with it
  } else if (_backend == partition_backend::mps && _context != nullptr) {
    r = detail::driver().ctx_destroy(_context);
  }
  assert(r == CUDA_SUCCESS);
  (void)r;
  _green = nullptr;
  _context = nullptr;
}

stream green_context::make_stream(int priority) const {
  if (_context == nullptr) throw partition_error("make_stream: the partition was moved from");
  CUstream s = nullptr;
  if (_backend == partition_backend::green) {
    RESIDENT_CU_TRY(
        detail::driver().green_ctx_stream_create(&s, _green, CU_STREAM_NON_BLOCKING, priority));
  } else {
    // A stream belongs to the context current when it is made.
    const detail::pushed_context in_partition(_context);
    RESIDENT_CU_TRY(
        detail::driver().stream_create_with_priority(&s, CU_STREAM_NON_BLOCKING, priority));
  }
  return stream::adopt(reinterpret_cast<cudaStream_t>(s));
}

green_context::current_scope::current_scope(const green_context* partition) {
  if (partition == nullptr) return;
  RESIDENT_CU_TRY(detail::driver().ctx_get_current(&_previous));
  RESIDENT_CU_TRY(detail::driver().ctx_set_current(partition->context()));
  _active = true;
}

green_context::current_scope::~current_scope() {
  if (!_active) return;
  const CUresult r = detail::driver().ctx_set_current(_previous);
  assert(r == CUDA_SUCCESS);
  (void)r;
}

std::shared_ptr<partition_set> partition_set::split(const std::vector<int>& sm_counts,
                                                    split_options o) {
  if (sm_counts.empty()) throw partition_error("split: no partition sizes given");
  for (std::size_t i = 0; i < sm_counts.size(); ++i) {
    if (sm_counts[i] <= 0) {
      throw partition_error("split: partition " + std::to_string(i) + " asks for " +
                            std::to_string(sm_counts[i]) + " SMs");
    }
  }
  return o.backend == partition_backend::mps ? split_mps(sm_counts, o) : split_green(sm_counts, o);
}

std::shared_ptr<partition_set> partition_set::split_green(const std::vector<int>& sm_counts,
                                                          const split_options& o) {
  // Under MPS the driver still makes green contexts, but their SM sets overlap (on the H200 a 16-
  // and a 24-SM partition both ran on SMs 0-15): refuse rather than hand out partitions that
  // only look disjoint.
  if (mps_available(o.device)) {
    throw partition_error(
        "split: this process is an MPS client (the MPS daemon is running), and green contexts "
        "then do not keep disjoint SM sets; use split_options::backend = mps (SM budgets, "
        "which may share SMs) or run without the daemon");
  }
  const CUdevice dev = detail::device_handle(o.device);
  auto set = std::shared_ptr<partition_set>(new partition_set());
  set->_self = set;
  set->_info = query_sm_resource(o.device, o.ignore_coscheduling);
  // The driver cannot split a split's output again, so the device is split once into groups of
  // the smallest size (the alignment), and each partition is a descriptor over as many whole
  // groups as it needs (groups of one split may be combined).
  const int unit = std::max(1, set->_info.alignment);
  const unsigned flags = split_flags(o.ignore_coscheduling);
  const CUdevResource all = device_sms(dev);
  std::vector<CUdevResource> pieces;
  CUdevResource rest{};
  RESIDENT_CU_TRY(split_into_groups(all, unit, flags, pieces, &rest));
  std::size_t next = 0;
  int given = 0;
  for (std::size_t i = 0; i < sm_counts.size(); ++i) {
    const int count = sm_counts[i];
    // Whole groups, and never less than the driver's minimum partition.
    const int wanted = std::max(count, set->_info.min_partition);
    std::size_t take = 0;
    int sms = 0;
    while (sms < wanted && next + take < pieces.size())
      sms += static_cast<int>(pieces[next + take++].sm.smCount);
    if (sms < wanted) {
      throw partition_error("split: partition " + std::to_string(i) + " (" + std::to_string(count) +
                            " SMs) does not fit: " + std::to_string(given) + " of the device's " +
                            std::to_string(set->_info.sm_count) + " SMs went to partitions 0.." +
                            std::to_string(static_cast<int>(i) - 1) + " (partitions are whole " +
                            "groups of " + std::to_string(unit) + " SMs, at least " +
                            std::to_string(set->_info.min_partition) + ")");
    }
    if (o.rest_to_last && i + 1 == sm_counts.size()) {
      // Every group left, and the remainder: outputs of one split may share a descriptor.
      for (; next + take < pieces.size(); ++take)
        sms += static_cast<int>(pieces[next + take].sm.smCount);
      if (rest.sm.smCount > 0) {
        pieces.push_back(rest);
        ++take;
        sms += static_cast<int>(rest.sm.smCount);
      }
    }
    CUdevResourceDesc desc{};
    RESIDENT_CU_TRY(detail::driver().dev_resource_generate_desc(&desc, pieces.data() + next,
                                                                static_cast<unsigned>(take)));
    CUgreenCtx ctx{};
    RESIDENT_CU_TRY(
        detail::driver().green_ctx_create(&ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    set->_parts.push_back(
        std::unique_ptr<green_context>(new green_context(ctx, sms, o.device, static_cast<int>(i))));
    next += take;
    given += sms;
  }
  set->_remaining = set->_info.sm_count - given;
  return set;
}

std::shared_ptr<const green_context> partition_set::share(std::size_t i) const {
  auto self = _self.lock();
  if (!self) throw partition_error("share: the partition set is not owned by a shared_ptr");
  return {self, _parts.at(i).get()};  // aliasing: the partition keeps the whole set alive
}

cudaGraphConditionalHandle make_conditional_handle(cudaGraph_t graph,
                                                   const green_context* partition,
                                                   unsigned default_value, unsigned flags) {
  cudaGraphConditionalHandle handle{};
  if (partition == nullptr) {
    RESIDENT_CUDA_TRY(cudaGraphConditionalHandleCreate(&handle, graph, default_value, flags));
    return handle;
  }
  CUgraphConditionalHandle h{};
  RESIDENT_CU_TRY(detail::driver().graph_conditional_handle_create(
      &h, reinterpret_cast<CUgraph>(graph), partition->context(), default_value, flags));
  return static_cast<cudaGraphConditionalHandle>(h);
}

cudaGraph_t add_conditional_node(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                                 cudaGraphConditionalHandle handle,
                                 cudaGraphConditionalNodeType type,
                                 const green_context& partition) {
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  params.conditional.handle = static_cast<CUgraphConditionalHandle>(handle);
  params.conditional.type = static_cast<CUgraphConditionalNodeType>(type);
  params.conditional.size = 1;
  params.conditional.ctx = partition.context();
  CUgraphNode node{};
  RESIDENT_CU_TRY(detail::driver().graph_add_node(&node, reinterpret_cast<CUgraph>(graph),
                                                  reinterpret_cast<const CUgraphNode*>(deps.data()),
                                                  nullptr, deps.size(), &params));
  return reinterpret_cast<cudaGraph_t>(params.conditional.phGraph_out[0]);
}

}  // namespace resident::partition
