# RESIDENT_REQUIRE_GPU=1 makes the GPU suite fail where it would skip for want of a GPU: runs a
# few GPU tests (mailbox.*, and the MPS ones, which may still skip) once plainly and once with
# the variable set. Without a GPU the second run must fail and say why; with one, it must pass.
#   cmake -DTESTS=<resident_gpu_tests> -DWORK=<scratch dir> -P check_require_gpu.cmake
set(filter "--gtest_filter=mailbox.*:mps.*")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=RESIDENT_REQUIRE_GPU "${TESTS}" ${filter}
                        --gtest_color=no
                RESULT_VARIABLE plain_rc OUTPUT_VARIABLE plain ERROR_VARIABLE plain_err)
if(NOT plain_rc EQUAL 0)
  message(FATAL_ERROR "the plain run failed (${plain_rc}):\n${plain}\n${plain_err}")
endif()
string(FIND "${plain}" "no usable CUDA GPU or driver was found" no_gpu)
execute_process(COMMAND ${CMAKE_COMMAND} -E env RESIDENT_REQUIRE_GPU=1 "${TESTS}" ${filter}
                        --gtest_color=no
                RESULT_VARIABLE required_rc OUTPUT_VARIABLE required ERROR_VARIABLE required_err)
if(no_gpu GREATER_EQUAL 0)
  string(FIND "${required}" "RESIDENT_REQUIRE_GPU=1 says this machine has one" said)
  if(required_rc EQUAL 0 OR said LESS 0)
    message(FATAL_ERROR "without a GPU, RESIDENT_REQUIRE_GPU=1 did not fail the suite "
                        "(exit ${required_rc}):\n${required}\n${required_err}")
  endif()
  message(STATUS "no GPU here: with RESIDENT_REQUIRE_GPU=1 the GPU tests fail (exit "
                 "${required_rc}), as they must")
elseif(NOT required_rc EQUAL 0)
  message(FATAL_ERROR "with a GPU, RESIDENT_REQUIRE_GPU=1 failed the suite "
                      "(exit ${required_rc}):\n${required}\n${required_err}")
else()
  message(STATUS "a GPU here: with RESIDENT_REQUIRE_GPU=1 the GPU tests pass")
endif()
