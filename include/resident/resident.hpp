#pragma once
// Everything a resident application needs: the runtime (measurement and bench machinery are
// resident::lab's, lab/include).
#include "resident/app.hpp"
#include "resident/cuda.hpp"
#include "resident/exec.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops.hpp"
#include "resident/version.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/partition/planner.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/be_queue.hpp"
#include "resident/sched/padded.hpp"
#include "resident/sched/padding.hpp"
#include "resident/sched/preemptible.hpp"
#include "resident/sched/preemption.hpp"
