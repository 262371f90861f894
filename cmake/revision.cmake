# SPDX-License-Identifier: Apache-2.0
# Writes the git revision (or "unknown" outside a checkout) into a header, touching it only on change.
execute_process(COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
endif()
set(text "#pragma once\n#define GPUVS_GIT_REVISION \"${rev}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
