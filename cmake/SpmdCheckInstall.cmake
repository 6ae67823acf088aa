# SpmdCheckInstall.cmake - the installed CMake package and the docs.
#
# Each part installs its own targets and headers next to its add_library()
# (annotations/, core/, runtime/, plugin/, plugin/tools/); this file, included
# last by the top-level CMakeLists.txt, writes what ties them together:
#
#   <prefix>/lib/cmake/SpmdCheck/
#     SpmdCheckConfig.cmake         find_package(SpmdCheck [COMPONENTS ...])
#     SpmdCheckConfigVersion.cmake  same major version, >= requested
#     SpmdCheckTargets.cmake        spmd::annotations, spmd::core
#     SpmdCheckRuntimeTargets.cmake spmd::runtime (when the runtime is built)
#     SpmdCheck.cmake               spmd_typecheck()
#   <prefix>/share/doc/spmd_check/  README.md and docs/*.md
#
# Everything is relative to the prefix (relocatable); libtorch is found again
# by the consumer through find_dependency(Torch).

include(CMakePackageConfigHelpers)

set(SPMD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/SpmdCheck)

install(EXPORT SpmdCheckTargets NAMESPACE spmd::
        DESTINATION ${SPMD_INSTALL_CMAKEDIR} COMPONENT dev)
set(SPMD_INSTALLED_RUNTIME OFF)
if(TARGET spmd_runtime)
  set(SPMD_INSTALLED_RUNTIME ON)
  install(EXPORT SpmdCheckRuntimeTargets NAMESPACE spmd::
          DESTINATION ${SPMD_INSTALL_CMAKEDIR} COMPONENT dev)
endif()
set(SPMD_INSTALLED_PLUGIN OFF)
if(TARGET spmd-check)
  set(SPMD_INSTALLED_PLUGIN ON)
endif()
set(SPMD_INSTALLED_TOOLS OFF)
if(TARGET spmd-check-tool)
  set(SPMD_INSTALLED_TOOLS ON)
endif()
set(SPMD_INSTALLED_CLANG_MAJOR "${LLVM_VERSION_MAJOR}")
if(NOT SPMD_INSTALLED_CLANG_MAJOR)
  set(SPMD_INSTALLED_CLANG_MAJOR 19)
endif()

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/SpmdCheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/SpmdCheckConfig.cmake
  INSTALL_DESTINATION ${SPMD_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/SpmdCheckConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/SpmdCheckConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/SpmdCheckConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/SpmdCheck.cmake
        DESTINATION ${SPMD_INSTALL_CMAKEDIR} COMPONENT dev)

install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc
        FILES_MATCHING PATTERN "*.md")
