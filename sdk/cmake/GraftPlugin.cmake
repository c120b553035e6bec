# graft_add_plugin(<target> KIND <backend|quant|kvstore|drafter|kernels> NAME <name> SOURCES <src>...
#                  [NO_INSTALL])
#
# Builds a loadable graft plugin named libgraft_<kind>_<name>.so, the file name the host looks for.
# Works in graft's own tree and, through find_package(graft_sdk), in third-party projects. Set
# GRAFT_PLUGIN_OUTPUT_DIR to choose where the .so lands (graft's tree puts it next to the host).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(graft_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "KIND;NAME" "SOURCES" ${ARGN})
  if(NOT ARG_KIND OR NOT ARG_NAME)
    message(FATAL_ERROR "graft_add_plugin(${target}): KIND and NAME are required")
  endif()
  set(kinds backend quant kvstore drafter kernels)
  if(NOT ARG_KIND IN_LIST kinds)
    message(FATAL_ERROR "graft_add_plugin(${target}): KIND must be one of ${kinds}, got '${ARG_KIND}'")
  endif()
  # A kernel library is named for its backend, then optionally -<its own name> (cuda, cuda-acme).
  if(ARG_KIND STREQUAL "kernels")
    if(NOT ARG_NAME MATCHES "^[a-z0-9_]+(-[a-z0-9_]+)?$")
      message(FATAL_ERROR "graft_add_plugin(${target}): a kernels NAME must be <backend> or <backend>-<name> "
                          "([a-z0-9_]+), got '${ARG_NAME}'")
    endif()
  elseif(NOT ARG_NAME MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "graft_add_plugin(${target}): NAME must match [a-z0-9_]+, got '${ARG_NAME}'")
  endif()

  add_library(${target} MODULE ${ARG_SOURCES})
  if(TARGET graft::sdk)
    target_link_libraries(${target} PRIVATE graft::sdk)
  else()
    message(FATAL_ERROR "graft_add_plugin: graft::sdk not found (find_package(graft_sdk) first)")
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "graft_${ARG_KIND}_${ARG_NAME}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(GRAFT_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${GRAFT_PLUGIN_OUTPUT_DIR})
  endif()
  # Refuse undefined symbols at link time instead of at dlopen time.
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION lib/graft/plugins)
  endif()
endfunction()
