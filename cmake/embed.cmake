# SPDX-License-Identifier: Apache-2.0
# Writes OUT, a C++ source defining `const char* const NAME` with the contents of IN (a raw string literal),
# so the binary carries its data files and works from any directory.
file(READ ${IN} text)
set(delim "gpuvs_embed")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter")
endif()
file(WRITE ${OUT} "// Generated from ${IN} by cmake/embed.cmake.\nnamespace gpuvs::embedded {\nextern const char* const ${NAME};\nconst char* const ${NAME} = R\"${delim}(${text})${delim}\";\n}\n")
