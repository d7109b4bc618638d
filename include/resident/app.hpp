#pragma once
#include "resident/app/application.hpp"
#include "resident/app/error.hpp"
#include "resident/app/loop.hpp"
#include "resident/app/operator.hpp"
#include "resident/app/operator_spec.hpp"
#include "resident/app/parameters.hpp"
#include "resident/app/plan.hpp"
