# Runs BIN with ARGS (a |-joined list); passes iff the exit status matches EXPECT_RC ("zero" or
# "nonzero") and stdout+stderr match EXPECT_REGEX.
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${BIN} ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message(STATUS "exit ${rc}; output:\n${all}")
if(EXPECT_RC STREQUAL "zero" AND NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit 0, got ${rc}")
endif()
if(EXPECT_RC STREQUAL "nonzero" AND rc EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0")
endif()
if(NOT all MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "output does not match '${EXPECT_REGEX}'")
endif()
