# Installs the build into a scratch prefix and imports the installed package from there, with a
# working directory and PYTHONPATH that do not reach the build tree.
set(prefix "${BUILD_DIR}/python-install-check")
file(REMOVE_RECURSE "${prefix}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${err}")
endif()
set(site "${prefix}/${SITE_DIR}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${site}" "${PYTHON}" -c
          "import resident, resident.bench.stats, sys; assert resident.__file__.startswith(sys.argv[1]), resident.__file__; assert resident.bench.stats.__file__.startswith(sys.argv[1]); print(resident.__file__, resident.modes())"
          "${site}"
  WORKING_DIRECTORY "${prefix}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "importing the installed package failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
