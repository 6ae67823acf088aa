# SpmdCheck.cmake - SPMD type checking for CMake targets.
#
#   include(<spmd-check source dir>/cmake/SpmdCheck.cmake)
#   spmd_typecheck(<target> [MODE AUTO|PLUGIN|TOOL] [ARGS <plugin-arg>...])
#
# Checks the C++ sources of <target> with spmd-check, one of two ways:
#
#   PLUGIN  The compiler runs the checker: -fplugin=<spmd-check.so> and
#           -fplugin-arg-spmd-check-<arg> are added to the target's compile
#           options, so SPMD errors are compile errors, with no extra parse.
#           Needs Clang of the major version the plugin was built with.
#   TOOL    Any other compiler (GCC, another Clang): a build step runs the
#           standalone spmd-check over the target's sources with their
#           commands from compile_commands.json (exported for the target) and
#           <target> depends on it, so SPMD errors stop the build before the
#           target compiles. Re-runs when a source or an included header
#           changes. Needs the Ninja or a Makefile generator.
#   AUTO    (default) PLUGIN when the target's compiler is a compatible
#           Clang and the plugin is available, TOOL otherwise.
#
# ARGS are plugin arguments (strict, system-headers, warn=<kind>,
# error=<kind>, ignore=<kind>; see docs/tools.md); for TOOL they become the
# spmd-check options of the same names (--strict, --warn=<kind>, ...).
#
# Settings (cache or normal variables), all optional inside the spmd-check
# build, where the targets spmd-check (plugin) and spmd-check-tool exist:
#   SPMD_CHECK_PLUGIN      path of spmd-check.so
#   SPMD_CHECK_EXECUTABLE  path of the spmd-check program
#   SPMD_CHECK_CLANG_MAJOR Clang major version the plugin needs (19)
#   SPMD_TYPECHECK_MODE    forces MODE for every spmd_typecheck call

include_guard(GLOBAL)

set(SPMD_CHECK_CLANG_MAJOR 19 CACHE STRING
    "Clang major version the spmd-check plugin is built for")

function(_spmd_typecheck_plugin target args)
  if(TARGET spmd-check)
    set(plugin $<TARGET_FILE:spmd-check>)
    add_dependencies(${target} spmd-check)
  else()
    set(plugin ${SPMD_CHECK_PLUGIN})
  endif()
  set(options -fplugin=${plugin})
  foreach(arg IN LISTS args)
    list(APPEND options -fplugin-arg-spmd-check-${arg})
  endforeach()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${options}>)
endfunction()

function(_spmd_typecheck_tool target args)
  if(TARGET spmd-check-tool)
    set(exe $<TARGET_FILE:spmd-check-tool>)
    set(exe_dep spmd-check-tool)
  elseif(SPMD_CHECK_EXECUTABLE)
    set(exe ${SPMD_CHECK_EXECUTABLE})
    set(exe_dep ${SPMD_CHECK_EXECUTABLE})
  else()
    find_program(SPMD_CHECK_EXECUTABLE spmd-check)
    if(NOT SPMD_CHECK_EXECUTABLE)
      message(FATAL_ERROR "spmd_typecheck(${target}): the compiler cannot "
        "load the spmd-check plugin and no spmd-check program was found; "
        "set SPMD_CHECK_EXECUTABLE to its path (it is built as "
        "build/bin/spmd-check).")
    endif()
    set(exe ${SPMD_CHECK_EXECUTABLE})
    set(exe_dep ${SPMD_CHECK_EXECUTABLE})
  endif()
  if(CMAKE_GENERATOR MATCHES "Visual Studio|Xcode")
    message(FATAL_ERROR "spmd_typecheck(${target}) MODE TOOL needs "
      "compile_commands.json, which the ${CMAKE_GENERATOR} generator does "
      "not write; use Ninja or Makefiles.")
  endif()
  # The commands spmd-check reads; the property exports this target's even
  # when CMAKE_EXPORT_COMPILE_COMMANDS is off.
  set_target_properties(${target} PROPERTIES EXPORT_COMPILE_COMMANDS ON)

  get_target_property(dir ${target} SOURCE_DIR)
  get_target_property(srcs ${target} SOURCES)
  set(files)
  foreach(src IN LISTS srcs)
    if(src MATCHES "\\$<" OR NOT src MATCHES "\\.(cc|cpp|cxx|c\\+\\+|C)$")
      continue()
    endif()
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${dir})
    list(APPEND files ${abs})
  endforeach()
  if(NOT files)
    message(WARNING "spmd_typecheck(${target}): no C++ sources to check")
    return()
  endif()

  set(tool_args)
  foreach(arg IN LISTS args)
    list(APPEND tool_args --${arg})
  endforeach()
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.spmd_typecheck.stamp)
  set(depfile_args)
  set(depfile_opt)
  if(CMAKE_GENERATOR MATCHES "Ninja|Makefiles")
    set(depfile_opt DEPFILE ${stamp}.d)
    set(depfile_args --dependency-file=${stamp}.d --dependency-target=${stamp})
  endif()
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${exe} -p ${CMAKE_BINARY_DIR} ${tool_args} ${depfile_args}
            ${files}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${exe_dep}
    ${depfile_opt}
    COMMENT "spmd-check: checking the SPMD types of ${target}"
    VERBATIM)
  add_custom_target(${target}.spmd_typecheck DEPENDS ${stamp})
  add_dependencies(${target} ${target}.spmd_typecheck)
endfunction()

function(spmd_typecheck target)
  cmake_parse_arguments(PARSE_ARGV 1 SPMD "" "MODE" "ARGS")
  if(NOT TARGET ${target})
    message(FATAL_ERROR "spmd_typecheck: no target named '${target}'")
  endif()
  set(mode ${SPMD_MODE})
  if(SPMD_TYPECHECK_MODE)
    set(mode ${SPMD_TYPECHECK_MODE})
  endif()
  if(NOT mode)
    set(mode AUTO)
  endif()
  string(TOUPPER "${mode}" mode)
  if(NOT mode MATCHES "^(AUTO|PLUGIN|TOOL)$")
    message(FATAL_ERROR "spmd_typecheck(${target}): MODE must be AUTO, "
      "PLUGIN or TOOL, not '${mode}'")
  endif()

  set(have_plugin FALSE)
  if(TARGET spmd-check OR (SPMD_CHECK_PLUGIN AND EXISTS "${SPMD_CHECK_PLUGIN}"))
    set(have_plugin TRUE)
  endif()
  string(REGEX MATCH "^[0-9]+" major "${CMAKE_CXX_COMPILER_VERSION}")
  set(compatible FALSE)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND
     major STREQUAL SPMD_CHECK_CLANG_MAJOR)
    set(compatible TRUE)
  endif()

  if(mode STREQUAL "AUTO")
    if(compatible AND have_plugin)
      set(mode PLUGIN)
    else()
      set(mode TOOL)
    endif()
  endif()
  if(mode STREQUAL "PLUGIN")
    if(NOT compatible)
      message(FATAL_ERROR "spmd_typecheck(${target}) MODE PLUGIN: the "
        "compiler is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}; "
        "the plugin needs Clang ${SPMD_CHECK_CLANG_MAJOR}. Use MODE TOOL (or "
        "AUTO) with this compiler.")
    endif()
    if(NOT have_plugin)
      message(FATAL_ERROR "spmd_typecheck(${target}) MODE PLUGIN: set "
        "SPMD_CHECK_PLUGIN to the path of spmd-check.so (built as "
        "build/lib/spmd-check.so).")
    endif()
    _spmd_typecheck_plugin(${target} "${SPMD_ARGS}")
  else()
    _spmd_typecheck_tool(${target} "${SPMD_ARGS}")
  endif()
  message(STATUS "spmd_typecheck(${target}): ${mode}")
endfunction()
