# graft_sdk_header_hash(<out_var> <dir>)
#
# The SDK header hash: SHA-256 over the SHA-256 of each *.hpp in <dir>, in byte order of the file
# names, cut to 16 hex digits. Only the bytes of the files count (no paths, no dates, no newline or
# encoding normalisation), so every checkout of the same headers gets the same value. The generated
# sdk_generated.hpp is left out, so an installed include/graft hashes like the source folder.
#
# Script mode prints the hash of a folder: cmake -DGRAFT_SDK_HASH_DIR=<dir> -P GraftSdkHash.cmake
include_guard(GLOBAL)

function(graft_sdk_header_hash out dir)
  file(GLOB headers LIST_DIRECTORIES false RELATIVE "${dir}" "${dir}/*.hpp")
  list(REMOVE_ITEM headers sdk_generated.hpp)
  if(NOT headers)
    message(FATAL_ERROR "graft_sdk_header_hash: no *.hpp in ${dir}")
  endif()
  list(SORT headers COMPARE STRING)
  set(digests "")
  foreach(header IN LISTS headers)
    file(SHA256 "${dir}/${header}" digest)
    string(APPEND digests "${digest}\n")
  endforeach()
  string(SHA256 all "${digests}")
  string(SUBSTRING "${all}" 0 16 short)
  set(${out} "${short}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED GRAFT_SDK_HASH_DIR)
  graft_sdk_header_hash(hash "${GRAFT_SDK_HASH_DIR}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${hash}")
endif()
