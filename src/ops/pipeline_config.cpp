// A pipeline file's application (resident/ops/pipeline_config.hpp): its operators made through
// the catalog, its flows and handler; and the check with stand-ins for the mailbox ends.
#include "resident/ops/pipeline_config.hpp"

#include <map>

#include "resident/app/error.hpp"
#include "resident/app/port_stand_in.hpp"
#include "resident/ops/catalog.hpp"

namespace resident::ops {

namespace {

/// The operator `op` describes: through the catalog, or (checking only, no mailbox) a stand-in
/// with the mailbox end's port.
std::shared_ptr<Operator> make_described(const pipeline_description& d, const pipeline_operator& op,
                                         const std::shared_ptr<io::mailbox>& mailbox) {
  const operator_kind& kind = operator_kind_named(op.kind);
  if (kind.input == kind_input::mailbox && !mailbox) {
    const bool rx = op.kind == "io.mailbox_rx";
    const std::size_t out = d.mailbox->output_bytes;
    return std::make_shared<port_stand_in>(rx ? port_direction::output : port_direction::input,
                                           rx ? "sample" : "in",
                                           rx ? d.mailbox->input_bytes : (out == 0 ? 1 : out));
  }
  kind_inputs in;
  in.mailbox = mailbox;
  return kind.make(in);
}

/// The flows and the handler of `d` over the operators `made` (by name).
void connect(Application& app, const pipeline_description& d,
             std::map<std::string, std::shared_ptr<Operator>>& made) {
  for (const auto& f : d.flows) {
    std::vector<std::pair<std::string, std::string>> ports;
    if (!f.from_port.empty() || !f.to_port.empty()) {
      const auto only = [](const Operator& op, port_direction dir) {
        const auto names = op.spec().port_names(dir);
        return names.size() == 1 ? names.front() : std::string("(one of several: name it)");
      };
      ports.emplace_back(
          f.from_port.empty() ? only(*made[f.from], port_direction::output) : f.from_port,
          f.to_port.empty() ? only(*made[f.to], port_direction::input) : f.to_port);
    }
    try {
      app.add_flow(made[f.from], made[f.to], std::move(ports));
    } catch (const composition_error& e) {
      throw config_error(f.where + ": " + e.what());
    }
  }
}

/// A pipeline only checked: stand-ins for the mailbox ends, no handler (planning needs none).
class checked_pipeline final : public Application {
 public:
  explicit checked_pipeline(const pipeline_description& d) : Application("check"), _d(d) {}
  void compose() override {
    std::map<std::string, std::shared_ptr<Operator>> made;
    for (const auto& op : _d.operators) {
      made[op.name] = add_operator(make_described(_d, op, nullptr), op.name, op.params);
    }
    connect(*this, _d, made);
  }

 private:
  const pipeline_description& _d;
};

}  // namespace

void check_pipeline(const pipeline_description& description) {
  checked_pipeline app(description);
  try {
    (void)app.plan();
  } catch (const config_error&) {
    throw;
  } catch (const composition_error& e) {
    // What the plan found (an input nothing feeds, a cycle, ...) in this file's terms.
    throw config_error(description.origin + ": " + e.what() +
                       " (in a pipeline file, flows are 'from.port -> to.port' lines)");
  }
}

pipeline_description parse_pipeline_text(std::string_view yaml, std::string origin) {
  return parse_pipeline_text(yaml, std::move(origin),
                             [](std::string_view kind) { return operator_kind_named(kind).input; });
}

yaml_pipeline::yaml_pipeline(pipeline_description description)
    : Application(std::filesystem::path(description.origin).stem().string()),
      _description(std::move(description)) {
  if (_description.mailbox) _mailbox = std::make_shared<io::mailbox>(*_description.mailbox);
}

void yaml_pipeline::compose() {
  std::map<std::string, std::shared_ptr<Operator>> made;
  for (const auto& op : _description.operators) {
    made[op.name] = add_operator(make_described(_description, op, _mailbox), op.name, op.params);
  }
  connect(*this, _description, made);
  if (!_description.handler.empty()) {
    const auto rx = std::dynamic_pointer_cast<io::mailbox_rx>(made[_description.handler]);
    register_data_ready_handler(_mailbox->make_handler(rx));
  }
}

}  // namespace resident::ops
