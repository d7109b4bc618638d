#include "resident/exec/submission.hpp"

#include <string>

#include "resident/app/error.hpp"
#include "resident/app/operator.hpp"
#include "resident/app/plan.hpp"

namespace resident {

direct_submission::direct_submission(Application& app)
    : _app(app), _guard(app, "direct submission") {
  const dag_plan& p = app.plan();  // composes: only then is a handler registered
  if (app.has_data_ready_handler()) {
    throw composition_error("application '" + app.name() +
                            "' registers a data-ready handler, which publishes samples to a "
                            "loop; direct submission runs no loop (use run_async)");
  }
  app.materialize();
  _order = p.body_order;
}

void direct_submission::compute_all(stream_view s, bool capturing, bool programmatic) {
  for (Operator* op : _order) {
    try {
      CaptureContext ctx(*op, s.get(), nullptr, capturing, programmatic);
      op->compute(ctx);
    } catch (const std::exception& e) {
      throw execution_error("operator '" + op->name() + "' compute() failed in direct " +
                            (capturing ? "graph capture: " : "submission: ") + e.what());
    }
  }
}

void direct_submission::submit(stream_view s) { compute_all(s, false); }

void direct_submission::submit_operator(std::size_t index, stream_view s) {
  Operator* op = _order.at(index);
  try {
    CaptureContext ctx(*op, s.get(), nullptr, false);
    op->compute(ctx);
  } catch (const std::exception& e) {
    throw execution_error("operator '" + op->name() +
                          "' compute() failed in direct submission: " + e.what());
  }
}

graph direct_submission::capture(stream_view s, launch_edges edges) {
  const bool programmatic = edges == launch_edges::programmatic;
  return capture_graph(
      s, [this, programmatic](stream_view cs) { compute_all(cs, true, programmatic); });
}

}  // namespace resident
