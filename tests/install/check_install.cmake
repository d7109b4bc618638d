# Installs the build into a scratch prefix, then configures, builds and runs a consumer that
# finds it with find_package(resident).
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
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install" -B "${work}/build"
    "-DCMAKE_PREFIX_PATH=${work}/prefix" -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${work}/build")
run("${work}/build/consumer")
