# cmake -DPROG=program -DARG=argument -DOUT=file -P run_to_file.cmake
# Runs `PROG help ARG` and keeps what it prints in OUT (the man page, the completion).
execute_process(COMMAND ${PROG} help ${ARG} OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} help ${ARG} failed: ${rc}")
endif()
