#pragma once
// One factory per execution mode; each lives in its own <mode>_executor.cpp.

#include <memory>

#include "resident/exec/executor.hpp"

namespace resident::detail {

std::unique_ptr<Executor> make_eager_executor(Application& app, const run_options& options);
std::unique_ptr<Executor> make_host_graph_executor(Application& app, const run_options& options);
std::unique_ptr<Executor> make_while_executor(Application& app, const run_options& options);
std::unique_ptr<Executor> make_tail_executor(Application& app, const run_options& options);
std::unique_ptr<Executor> make_persistent_executor(Application& app, const run_options& options);

}  // namespace resident::detail
