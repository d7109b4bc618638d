// The smallest complete resident program: a two-operator pipeline (affine, then square)
// between an emulated sensor and actuator, run unchanged in all four execution modes.
//
//   sensor ──▶ rx (data-ready handler) ──▶ affine ──▶ square ──▶ tx (egress) ──▶ actuator

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "resident/resident.hpp"

namespace {

constexpr std::int64_t elements = 4;

class minimal_app final : public resident::Application {
 public:
  minimal_app()
      : Application("minimal"),
        mailbox(std::make_shared<resident::io::mailbox>(resident::io::mailbox::config{
            .input_bytes = elements * sizeof(float), .output_bytes = elements * sizeof(float)})) {}

  void compose() override {
    using resident::arg;
    auto rx = make_operator<resident::io::mailbox_rx>("rx", mailbox);
    auto affine = make_operator<resident::ops::affine>("affine", arg("elements", elements),
                                                       arg("scale", 2.0), arg("offset", 1.0));
    auto square = make_operator<resident::ops::square>("square", arg("elements", elements));
    auto tx = make_operator<resident::io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));  // first in every iteration
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, square);  // single ports: "out" -> "in"
    add_flow(square, tx);
  }

  std::shared_ptr<resident::io::mailbox> mailbox;
};

}  // namespace

int main() {
  using namespace std::chrono_literals;
  // Before the first CUDA call: load every kernel now, not at its first launch, which beside a
  // running resident loop can wait for the loop to end (docs/api.md, "Running").
  resident::request_eager_module_loading();
  if (resident::device_count() == 0) {
    std::fprintf(stderr, "resident minimal example: no CUDA GPU on this machine (%s).\n",
                 resident::no_device_reason().c_str());
    return 2;
  }
  minimal_app app;  // one application object for every mode
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  int failures = 0;

  for (const auto mode : resident::all_execution_modes) {
    auto run = resident::run_async(app, mode);
    for (int i = 0; i < 3; ++i) {
      std::vector<float> x(elements);
      for (auto& v : x) v = dist(rng);
      const resident::io::output_stamp before = app.mailbox->latest_output();
      const std::uint64_t seq = app.mailbox->publish(std::as_bytes(std::span(x)));
      std::vector<float> y(elements);
      const std::uint64_t got =
          app.mailbox->wait_output(before, std::as_writable_bytes(std::span(y)), 2s).seq;
      bool ok = got == seq;
      for (std::int64_t k = 0; k < elements && ok; ++k) {
        const float want = (2.0F * x[k] + 1.0F) * (2.0F * x[k] + 1.0F);
        ok = std::abs(y[k] - want) <= 1e-6F * std::max(1.0F, want);
      }
      failures += ok ? 0 : 1;
      std::printf("%-10s sample %llu: x[0]=%+.4f -> y[0]=%.4f  %s\n",
                  std::string(resident::to_string(mode)).c_str(),
                  static_cast<unsigned long long>(seq), x[0], y[0], ok ? "ok" : "WRONG");
    }
    const resident::tear_down_report report = run->tear_down();
    std::printf("%-10s stopped=%s in %.1f us; processed=%llu dropped=%llu repeated=%llu%s%s\n",
                std::string(resident::to_string(mode)).c_str(), report.stopped ? "yes" : "NO",
                std::chrono::duration<double, std::micro>(report.elapsed).count(),
                static_cast<unsigned long long>(report.counters.processed),
                static_cast<unsigned long long>(report.counters.dropped),
                static_cast<unsigned long long>(report.counters.repeated),
                report.error.empty() ? "" : "; ", report.error.c_str());
    failures += report.stopped ? 0 : 1;
  }
  std::printf("%s\n",
              failures == 0 ? "all modes agree with the CPU reference" : "FAILED: see above");
  return failures == 0 ? 0 : 1;
}
