#pragma once
// The lab pipeline: sensor -> rx -> affine -> square -> sum -> tx -> actuator, between the
// mailbox's ends. `resident run` drives and checks it (and, without a mailbox, only checks its
// composition: rx and tx are then stand-ins with the same ports); `resident bench soak` runs it
// beside the camera.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "app/checked_bytes.hpp"
#include "resident/app/application.hpp"
#include "resident/app/operator.hpp"
#include "resident/app/port_stand_in.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops.hpp"

namespace resident::bench {

// Without a mailbox (a check), rx and tx are stand-ins with the same ports.
class lab_pipeline final : public Application {
 public:
  lab_pipeline(std::int64_t elements, bool with_mailbox)
      : Application("lab"),
        elements(elements),
        bytes(::resident::detail::checked_bytes(elements, sizeof(float), "--elements")),
        mailbox(with_mailbox
                    ? std::make_shared<io::mailbox>(io::mailbox::config{bytes, sizeof(float), 4})
                    : nullptr) {}

  void compose() override {
    std::shared_ptr<Operator> rx;
    std::shared_ptr<Operator> tx;
    if (mailbox) {
      rx = make_operator<io::mailbox_rx>("rx", mailbox);
      tx = make_operator<io::mailbox_tx>("tx", mailbox);
      register_data_ready_handler(mailbox->make_handler(rx));
    } else {
      rx = make_operator<port_stand_in>("rx", port_direction::output, "sample", bytes);
      tx = make_operator<port_stand_in>("tx", port_direction::input, "in", sizeof(float));
      data_ready_handler handler;
      handler.operators = {rx};
      register_data_ready_handler(std::move(handler));
    }
    affine = make_operator<ops::affine>("affine", arg("elements", elements));
    auto square = make_operator<ops::square>("square", arg("elements", elements));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", elements));
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, square);
    add_flow(square, sum);
    add_flow(sum, tx);
  }

  std::int64_t elements;
  std::size_t bytes;  // of one sample
  std::shared_ptr<io::mailbox> mailbox;
  std::shared_ptr<ops::affine> affine;
};

}  // namespace resident::bench
