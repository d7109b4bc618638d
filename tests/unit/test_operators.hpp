#pragma once
// Tiny CPU-only operators and helpers shared by the unit tests. Nothing here touches the GPU:
// compute() is never called because the tests never materialize or run an application.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/app/error.hpp"

namespace resident::test {

/// One port an operator declares in setup().
struct port_decl {
  std::string name;
  port_direction direction{};
  std::size_t bytes{};
  void* external{};
};

inline port_decl input(std::string name, std::size_t bytes, void* external = nullptr) {
  return {std::move(name), port_direction::input, bytes, external};
}

inline port_decl output(std::string name, std::size_t bytes, void* external = nullptr) {
  return {std::move(name), port_direction::output, bytes, external};
}

/// An operator whose ports are given to its constructor, declared in that order.
class ports_op : public Operator {
 public:
  explicit ports_op(std::vector<port_decl> ports = {}) : _ports(std::move(ports)) {}

  void setup(OperatorSpec& spec) override {
    for (const auto& p : _ports) {
      if (p.direction == port_direction::input) {
        spec.device_input(p.name, p.bytes, p.external);
      } else {
        spec.device_output(p.name, p.bytes, p.external);
      }
    }
  }
  void compute(CaptureContext&) override {}

 private:
  std::vector<port_decl> _ports;
};

/// Shorthands: a source with one output "out", a sink with one input "in", a relay with both.
inline std::vector<port_decl> source_ports(std::size_t bytes = 64) {
  return {output("out", bytes)};
}
inline std::vector<port_decl> sink_ports(std::size_t bytes = 64) { return {input("in", bytes)}; }
inline std::vector<port_decl> relay_ports(std::size_t bytes = 64) {
  return {input("in", bytes), output("out", bytes)};
}

/// Declares one parameter of each supported type and keeps the values setup() read.
class params_op : public Operator {
 public:
  void setup(OperatorSpec& spec) override {
    i64 = spec.param<std::int64_t>("i64", 1, "a 64-bit integer");
    i32 = spec.param<int>("i32", 2);
    i8 = spec.param<std::int8_t>("i8", 3);
    u8 = spec.param<std::uint8_t>("u8", 4);
    u64 = spec.param<std::uint64_t>("u64", 5);
    f32 = spec.param<float>("f32", 0.5F);
    f64 = spec.param<double>("f64", 1.5);
    flag = spec.param<bool>("flag", false);
    label = spec.param<std::string>("label", "none");
  }
  void compute(CaptureContext&) override {}

  std::int64_t i64{};
  int i32{};
  std::int8_t i8{};
  std::uint8_t u8{};
  std::uint64_t u64{};
  float f32{};
  double f64{};
  bool flag{};
  std::string label;
};

/// Declares the parameter "x" twice: setup() must fail.
class twice_declared_op : public Operator {
 public:
  void setup(OperatorSpec& spec) override {
    (void)spec.param<int>("x", 1);
    (void)spec.param<int>("x", 2);
  }
  void compute(CaptureContext&) override {}
};

/// Takes constructor arguments (one move-only) and declares parameters too.
class ctor_op : public Operator {
 public:
  ctor_op(int number, std::unique_ptr<std::string> text) : number(number), text(std::move(text)) {}

  void setup(OperatorSpec& spec) override {
    gain = spec.param<double>("gain", 1.0);
    label = spec.param<std::string>("label", "none");
  }
  void compute(CaptureContext&) override {}

  int number;
  std::unique_ptr<std::string> text;
  double gain{};
  std::string label;
};

/// An application whose compose() is a function, so each test states its own DAG.
class test_app final : public Application {
 public:
  using body = std::function<void(test_app&)>;

  explicit test_app(
      body compose_body = [](test_app&) {}, std::string name = "app")
      : Application(std::move(name)), _body(std::move(compose_body)) {}

  void compose() override {
    ++compose_calls;
    _body(*this);
  }

  int compose_calls{0};

 private:
  body _body;
};

/// A data-ready handler made of `ops`, with no host gate.
inline data_ready_handler handler_of(std::vector<std::shared_ptr<Operator>> ops) {
  data_ready_handler handler;
  handler.operators = std::move(ops);
  return handler;
}

/// Runs `f` and returns the message of the E it throws; records a failure when it throws
/// nothing or something else.
template <class E = composition_error, class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": "
                  << e.what();
    return {};
  }
  ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown";
  return {};
}

/// The message plan() fails with.
template <class E = composition_error>
std::string plan_error(Application& app) {
  return error_of<E>([&] { (void)app.plan(); });
}

/// Operator names, for comparing execution orders.
inline std::vector<std::string> names(const std::vector<Operator*>& ops) {
  std::vector<std::string> out;
  for (const Operator* op : ops) out.push_back(op->name());
  return out;
}

}  // namespace resident::test
