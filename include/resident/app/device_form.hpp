#pragma once
// Device forms: how an operator runs in persistent mode, where one kernel launched once loops
// over the handler's and the DAG's operators as device functions instead of launching them.
//
// A form is a type the operator's author writes in a .cu file (resident/app/persistent_kernel.cuh
// says what it holds: a name, an argument struct and a __device__ run function per phase). An
// operator offers it by overriding Operator::persistent_form(), which returns a device_form: the
// form's type, its arguments (port memory bound), its phases and a kernel that can run it.
//
// Why a kernel per set of forms, instantiated where the forms are compiled: the library is
// static and built without relocatable device code, so a device function in a user's .cu cannot
// be called from a kernel compiled in the library. The kernel is therefore a template
// (resident/app/persistent_kernel.cuh) that the form's own translation unit instantiates with
// the forms it must run; the runtime picks, among the kernels the DAG's forms name (and those
// registered with register_persistent_kernel), the smallest that holds every form of the DAG.
// No run-time compilation, no function pointers across modules; the cost is that the forms
// one kernel can run are fixed when it is compiled (docs/api.md, "Device forms").

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

namespace resident {

struct loop_state;

/// The persistent kernel's block size: every form runs in blocks of exactly this many threads.
inline constexpr int persistent_block_threads = 512;
/// The most bytes a form's argument struct may take.
inline constexpr std::size_t form_args_capacity = 256;
/// The most phases one form may have.
inline constexpr unsigned max_form_phases = 16;

/// A form's identity: one object per form type (its address is the identity) with its name.
struct form_type {
  const char* name;
};

/// The identity of form type F (F::name is a string literal naming it, e.g. "ops.affine").
template <class F>
inline constexpr form_type form_type_of{F::name};

namespace detail {
/// One step of the persistent kernel's loop, in device memory: a form, its phases and its
/// arguments.
struct form_step {
  std::uint32_t form{};  // its index in the kernel's form list
  std::uint32_t phases{1};
  std::uint32_t last_block_phases{};  // bit p: phase p ends with phase_end::last_block
  std::uint32_t* arrivals{};          // blocks done with a last-block phase (zero between)
  alignas(16) std::byte args[form_args_capacity]{};
};

struct persistent_launch {
  loop_state* loop{};
  const form_step* steps{};  // device memory: the handler's steps, then the DAG's
  int handler_steps{};
  int body_steps{};
  int blocks{1};  // > 1: a cooperative launch
  std::size_t shared_bytes{};
  bool timed{};  // run_options::phase_times
  cudaStream_t stream{};
};
}  // namespace detail

/// A persistent kernel compiled for a fixed list of forms (resident::persistent_kernels<...>()
/// in resident/app/persistent_kernel.cuh makes one).
struct persistent_kernel_set {
  std::span<const form_type* const> forms;  // a step's form index is its place in this list
  /// Blocks of persistent_block_threads that fit on one SM at once (both the one-block and the
  /// cooperative variant), with `shared_bytes` of dynamic shared memory.
  int (*blocks_per_sm)(bool timed, std::size_t shared_bytes);
  void (*launch)(const detail::persistent_launch& launch);

  /// The index of `t` in forms, or -1.
  [[nodiscard]] int index_of(const form_type* t) const noexcept {
    for (std::size_t i = 0; i < forms.size(); ++i) {
      if (forms[i] == t) return static_cast<int>(i);
    }
    return -1;
  }
};

/// Makes `kernels` a candidate for every later persistent run in this process (for a DAG whose
/// forms come from translation units that each name a smaller kernel). Idempotent.
void register_persistent_kernel(const persistent_kernel_set& kernels);
/// The kernels registered so far.
[[nodiscard]] std::vector<const persistent_kernel_set*> registered_persistent_kernels();

/// How a phase of a form ends.
enum class phase_end : std::uint8_t {
  /// Every block waits for every other (a grid barrier): the next phase sees all of this one.
  barrier,
  /// No barrier: the block that finishes this phase last runs the form's finish(), and the
  /// others go on at once. Neither the next phase nor the next form may read what this phase
  /// or finish() write; the next sample's pass may (the pass's closing barriers order it).
  last_block,
};

/// One operator's device form with its arguments, as Operator::persistent_form() returns it.
struct device_form {
  const form_type* type{};
  const persistent_kernel_set* kernels{};  // a kernel that can run it
  std::uint32_t phases{1};
  std::uint32_t last_block_phases{0};  // bit p: phase p ends with phase_end::last_block
  std::size_t shared_bytes{0};         // dynamic shared memory its phases use
  /// SMs' worth of blocks that "as many blocks as fit" must leave free: kernels outside the
  /// loop that this form waits for (the sensor bridge's commit kernel) need room to run.
  std::uint32_t reserve_sms{0};
  alignas(16) std::array<std::byte, form_args_capacity> args{};

  /// Form F with arguments `a`, run by `kernels` (which must hold F). A form may name no kernel
  /// (nullptr) when it only runs beside forms whose kernels hold it (the camera's endpoints).
  template <class F>
  [[nodiscard]] static device_form of(const typename F::args& a,
                                      const persistent_kernel_set* kernels) {
    using A = typename F::args;
    static_assert(std::is_trivially_copyable_v<A>, "a form's args must be trivially copyable");
    static_assert(sizeof(A) <= form_args_capacity, "a form's args exceed form_args_capacity");
    static_assert(alignof(A) <= 16, "a form's args may be aligned to at most 16 bytes");
    device_form f;
    f.type = &form_type_of<F>;
    f.kernels = kernels;
    std::memcpy(f.args.data(), &a, sizeof(A));
    return f;
  }
  /// `count` phases (1 to max_form_phases), each ending with a barrier unless set otherwise.
  device_form& with_phases(std::uint32_t count);
  device_form& with_phase_end(std::uint32_t phase, phase_end end);
  device_form& with_shared_bytes(std::size_t bytes) {
    shared_bytes = bytes;
    return *this;
  }
  device_form& with_reserved_sms(std::uint32_t sms) {
    reserve_sms = sms;
    return *this;
  }
  [[nodiscard]] std::string name() const { return type != nullptr ? type->name : "?"; }
};

}  // namespace resident
