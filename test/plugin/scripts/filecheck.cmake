# Runs COMPILE ARGS (a diagnostics-producing compile, so its exit status is
# ignored) and matches its output against CHECKFILE with FILECHECK.
execute_process(COMMAND ${COMPILE} ${ARGS}
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/filecheck-input.txt "${out}${err}")
execute_process(COMMAND ${FILECHECK} ${CHECKFILE}
  --input-file=${CMAKE_CURRENT_BINARY_DIR}/filecheck-input.txt
  RESULT_VARIABLE rc OUTPUT_VARIABLE fout ERROR_VARIABLE ferr)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "FileCheck failed:\n${fout}${ferr}\n--- input ---\n${out}${err}")
endif()
