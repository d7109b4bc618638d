# Installs the build into a scratch prefix, checks that the installed library is the runtime
# only (no lab machinery in libresident.a, no lab headers, no nlohmann-json in its package
# config), then configures, builds and runs a consumer that finds it with find_package(resident).
set(work "${BUILD_DIR}/install-check")
file(REMOVE_RECURSE "${work}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${work}/prefix")

# The lab (resident::lab) stays out of the installed library. Symbols that name it:
#   resident::measure::  recorder, statistics, receipts and their parser, the HTML report,
#                        contention (the stress spawner), host noise, break-even
#   resident::sim::      the issue-order simulator
#   overheads_from_receipt  the planner's receipt reader
#   resident::sched::be_model, mlp_model, cnn_model, *_reference(  the best-effort models and
#                        their fp64 CPU references
#   nlohmann::           JSON, which only the lab uses
file(GLOB_RECURSE archives "${work}/prefix/*/libresident.a")
list(LENGTH archives count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one installed libresident.a, found: ${archives}")
endif()
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -C "${archives}" RESULT_VARIABLE rc OUTPUT_VARIABLE symbols
                ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -C ${archives} failed (${rc})")
endif()
set(lab_patterns "resident::measure::" "resident::sim::" "overheads_from_receipt"
    "resident::sched::be_model" "resident::sched::mlp_model" "resident::sched::cnn_model"
    "_reference(" "nlohmann::")
set(found "")
string(REPLACE "\n" ";" lines "${symbols}")
foreach(pattern IN LISTS lab_patterns)
  set(hits "")
  foreach(line IN LISTS lines)
    string(FIND "${line}" "${pattern}" at)
    if(at GREATER_EQUAL 0)
      list(APPEND hits "${line}")
    endif()
  endforeach()
  list(LENGTH hits n)
  if(n GREATER 0)
    list(GET hits 0 first)
    string(APPEND found "  ${n} symbols with '${pattern}', e.g. ${first}\n")
  endif()
endforeach()
if(NOT found STREQUAL "")
  message(FATAL_ERROR "the installed libresident.a holds lab symbols:\n${found}")
endif()
message(STATUS "installed libresident.a: no lab symbols (${lab_patterns})")
foreach(header measure sim sched/be_models.hpp)
  if(EXISTS "${work}/prefix/include/resident/${header}")
    message(FATAL_ERROR "a lab header is installed: include/resident/${header}")
  endif()
endforeach()
file(GLOB_RECURSE configs "${work}/prefix/*/residentConfig.cmake")
file(READ "${configs}" config)
string(FIND "${config}" "nlohmann" at)
if(at GREATER_EQUAL 0)
  message(FATAL_ERROR "the installed package config needs nlohmann-json: ${configs}")
endif()

run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install" -B "${work}/build"
    "-DCMAKE_PREFIX_PATH=${work}/prefix" -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${work}/build")
execute_process(COMMAND "${work}/build/consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE consumer_out
                ERROR_VARIABLE consumer_err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer failed (${rc}):\n${consumer_out}\n${consumer_err}")
endif()
message(STATUS "${consumer_out}")

# A user's operator with its own device form (examples/custom_persistent), built against the
# installed package: all five modes with the same bits where there is a GPU; built only (exit
# status 2, "no usable CUDA GPU") where there is none.
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/custom_persistent" -B "${work}/custom"
    "-DCMAKE_PREFIX_PATH=${work}/prefix" -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
run(${CMAKE_COMMAND} --build "${work}/custom")
execute_process(COMMAND "${work}/custom/custom_persistent" RESULT_VARIABLE rc
                OUTPUT_VARIABLE custom_out ERROR_VARIABLE custom_err)
string(FIND "${consumer_out}" "no usable CUDA GPU" no_gpu)
if(rc EQUAL 2 AND no_gpu GREATER_EQUAL 0)
  message(STATUS "custom_persistent built; no GPU to run it: ${custom_err}")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "custom_persistent failed (${rc}):\n${custom_out}\n${custom_err}")
else()
  message(STATUS "${custom_out}")
endif()
