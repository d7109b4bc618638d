// Composes and plans a small application against the installed headers and library.
#include <cstdio>

#include "resident/resident.hpp"

namespace {
class source final : public resident::Operator {
  void setup(resident::OperatorSpec& spec) override { spec.device_output("out", 64); }
  void compute(resident::CaptureContext&) override {}
};

class two_ops final : public resident::Application {
  void compose() override {
    using resident::arg;
    auto src = make_operator<source>("source");
    auto a = make_operator<resident::ops::affine>("affine", arg("elements", 16));
    auto s = make_operator<resident::ops::square>("square", arg("elements", 16));
    add_flow(src, a);
    add_flow(a, s);
  }
};
}  // namespace

int main() {
  two_ops app;
  const auto& plan = app.plan();
  std::printf("resident %s: %zu operators, %zu buffers, GPUs: %d\n",
              std::string(resident::git_commit()).c_str(), plan.body_order.size(),
              plan.buffers.size(), resident::device_count());
  return plan.body_order.size() == 3 ? 0 : 1;
}
