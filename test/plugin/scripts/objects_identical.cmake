# Compiles SOURCE to an object file with and without -fplugin=PLUGIN and
# requires the two objects to be byte-identical.
file(MAKE_DIRECTORY ${WORKDIR})
foreach(variant plain plugin)
  set(extra)
  if(variant STREQUAL "plugin")
    set(extra -fplugin=${PLUGIN})
  endif()
  execute_process(COMMAND ${COMPILE} ${ARGS} ${extra} -c ${SOURCE}
      -o ${WORKDIR}/${variant}.o
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${variant} compile failed:\n${out}${err}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
    ${WORKDIR}/plain.o ${WORKDIR}/plugin.o RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "objects differ with and without the plugin")
endif()
file(SIZE ${WORKDIR}/plain.o size)
message(STATUS "identical objects (${size} bytes)")
