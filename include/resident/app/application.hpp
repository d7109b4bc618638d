#pragma once
// Application: a DAG of operators, written once and run in any execution mode.
//
//   class my_app : public resident::Application {
//    public:
//     std::shared_ptr<io::mailbox> mailbox = std::make_shared<io::mailbox>(
//         io::mailbox::config{.input_bytes = 4096, .output_bytes = 4096});
//     void compose() override {
//       auto rx  = make_operator<io::mailbox_rx>("rx", mailbox);
//       auto aff = make_operator<ops::affine>("affine", arg("elements", 1024));
//       auto tx  = make_operator<io::mailbox_tx>("tx", mailbox);
//       register_data_ready_handler(mailbox->make_handler(rx));
//       add_flow(rx, aff, {{"sample", "in"}});
//       add_flow(aff, tx, {{"out", "in"}});
//     }
//   };
//
// (examples/minimal/main.cpp runs a complete one in every mode.)

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "resident/app/error.hpp"
#include "resident/app/loop.hpp"
#include "resident/app/operator.hpp"
#include "resident/app/plan.hpp"
#include "resident/app/stream_plan.hpp"

namespace resident {

class device_buffer;
namespace detail {
struct config_values;
}

/// The data-ready handler: operators captured on their own stream, first in every iteration,
/// whose kernels publish the sequence number of the ready sample (resident::device::publish).
struct data_ready_handler {
  std::vector<std::shared_ptr<Operator>> operators;
  /// Host-driven modes only: a cheap host-side check run before launching an iteration
  /// (e.g. "has the sensor written a sample newer than last_seq?"). Empty: always launch.
  std::function<bool(std::uint64_t last_seq, sample_policy policy)> host_gate;
  /// The newest sample that already existed when the loop starts (e.g. what a sensor published
  /// before launch): the loop begins after it, so older samples are neither processed nor
  /// counted as dropped. Empty: sequence numbers start at 1.
  std::function<std::uint64_t()> start_after;
};

class Application {
 public:
  explicit Application(std::string name = "app");
  Application(const Application&) = delete;
  Application& operator=(const Application&) = delete;
  virtual ~Application();

  /// Creates the operators and flows. Called once, by plan().
  virtual void compose() = 0;

  /// Operator parameters from YAML: a map of operator name -> {parameter: value}. Call before
  /// the application is composed; values from the file override values given in code.
  void load_config(const std::filesystem::path& yaml_file);
  void load_config_text(std::string_view yaml, std::string origin = "<config>");

  /// Creates an operator and runs its setup(). Arguments of type resident::arg are parameters;
  /// the rest go to Op's constructor.
  template <class Op, class... A>
  std::shared_ptr<Op> make_operator(std::string name, A&&... args);

  /// Connects output ports of `src` to input ports of `dst`: {{"out", "in"}, ...}. With no port
  /// pairs, connects src's only output to dst's only input.
  void add_flow(const std::shared_ptr<Operator>& src, const std::shared_ptr<Operator>& dst,
                std::vector<std::pair<std::string, std::string>> ports = {});

  void register_data_ready_handler(data_ready_handler handler);
  /// make_operator's untyped form, for operators chosen at run time (the Python bindings): sets
  /// up `op` (not yet set up) under `name` with parameters `args`. Inside compose() only.
  std::shared_ptr<Operator> add_operator(std::shared_ptr<Operator> op, std::string name,
                                         std::vector<arg> args);

  /// Composes (once), validates and plans buffers. CPU only; throws composition_error.
  const dag_plan& plan();
  /// Allocates the port memory on `device` and initializes every operator (once), with that
  /// device current; the caller's current device is left as it was. Needs a GPU. Throws
  /// composition_error when the application was materialized on another device already.
  void materialize(int device);
  /// As above, on the calling thread's current device.
  void materialize();
  [[nodiscard]] bool materialized() const noexcept { return _materialized; }
  /// The device the application was materialized on (-1 before).
  [[nodiscard]] int device() const noexcept { return _device; }

  /// What a running loop touches besides its own memory: the operators (with their parameters
  /// and memory) and the port memory. Executors hold both, so a loop that could not be stopped
  /// never touches freed memory, even once the Application is gone.
  [[nodiscard]] const std::vector<std::shared_ptr<Operator>>& operators() const noexcept {
    return _operators;
  }
  [[nodiscard]] std::shared_ptr<const void> port_memory() const noexcept { return _port_memory; }

  /// The operator DAG in Graphviz DOT (handler operators in their own cluster), each operator
  /// labelled with its place in the capture order and, for `forked`, its stream.
  [[nodiscard]] std::string to_dot(capture_order order = capture_order::chain);

  [[nodiscard]] const std::string& name() const noexcept { return _name; }
  [[nodiscard]] bool has_data_ready_handler() const noexcept { return _handler_registered; }
  [[nodiscard]] const data_ready_handler& handler() const noexcept { return _handler; }
  [[nodiscard]] Operator& find_operator(std::string_view name) const;

  /// One run at a time per application: the executor holds this while its loop runs.
  class run_guard {
   public:
    run_guard() = default;
    explicit run_guard(Application& app, std::string mode);
    run_guard(run_guard&& other) noexcept;
    run_guard& operator=(run_guard&& other) noexcept;
    ~run_guard();

   private:
    Application* _app{};
  };

 private:
  std::vector<arg> config_args_for(const std::string& op_name);
  void check_config_names() const;
  void reset_composition();

  std::string _name;
  std::vector<std::shared_ptr<Operator>> _operators;  // creation order
  std::vector<flow> _flows;
  data_ready_handler _handler;
  bool _handler_registered{false};
  std::unique_ptr<detail::config_values> _config;
  std::unique_ptr<dag_plan> _plan;
  std::shared_ptr<const void> _port_memory;  // std::vector<device_buffer>, shared with loops
  int _device{-1};
  bool _composing{false};
  bool _materialized{false};
  std::atomic<bool> _running{false};
  std::string _running_mode;
};

namespace detail {
template <class T>
void collect_parameter(std::vector<arg>& params, T&& value) {
  if constexpr (std::is_same_v<std::remove_cvref_t<T>, arg>) {
    params.push_back(std::forward<T>(value));
  }
}
template <class T>
auto constructor_arg(T&& value) {
  if constexpr (std::is_same_v<std::remove_cvref_t<T>, arg>) {
    return std::tuple<>{};
  } else {
    return std::tuple<T&&>(std::forward<T>(value));
  }
}
}  // namespace detail

template <class Op, class... A>
std::shared_ptr<Op> Application::make_operator(std::string name, A&&... args) {
  static_assert(std::is_base_of_v<Operator, Op>, "make_operator<Op>: Op must derive Operator");
  // Parameters keep their written order (a later value of the same name wins), so collect them
  // with a comma fold, which is sequenced left to right; function arguments are not. Each
  // argument is used once: args go to `params`, the rest to Op's constructor.
  std::vector<arg> params;
  (detail::collect_parameter(params, std::forward<A>(args)), ...);
  auto ctor_args = std::tuple_cat(detail::constructor_arg(std::forward<A>(args))...);
  auto op =
      std::apply([](auto&&... c) { return std::make_shared<Op>(std::forward<decltype(c)>(c)...); },
                 std::move(ctor_args));
  add_operator(op, std::move(name), std::move(params));
  return op;
}

}  // namespace resident
