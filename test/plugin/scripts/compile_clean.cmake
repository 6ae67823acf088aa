# Compiles each of SOURCES with COMPILE ARGS and requires success with no
# output at all (no diagnostic from the plugin, no crash).
foreach(src ${SOURCES})
  execute_process(COMMAND ${COMPILE} ${ARGS} ${src}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
    message(FATAL_ERROR "${src}: rc=${rc}\n${out}${err}")
  endif()
endforeach()
