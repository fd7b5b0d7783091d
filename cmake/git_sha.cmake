# Writes OUT (a header defining DTBENCH_GIT_SHA) at build time, so a record names the commit the binary was
# built from, with "-dirty" for uncommitted changes to tracked files. The file is rewritten only when the
# text changes, so an unchanged tree recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT sha)
  set(sha "unknown")
elseif(dirty)
  set(sha "${sha}-dirty")
endif()
set(text "// Generated at build time by cmake/git_sha.cmake.\n#pragma once\n#define DTBENCH_GIT_SHA \"${sha}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
