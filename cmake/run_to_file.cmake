# cmake -DPROG=program -DARG=argument [-DARG2=argument] -DOUT=file -P run_to_file.cmake
# Runs `PROG help ARG [ARG2]` and keeps what it prints in OUT (the man page, the completion).
execute_process(COMMAND ${PROG} help ${ARG} ${ARG2} OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} help ${ARG} ${ARG2} failed: ${rc}")
endif()
