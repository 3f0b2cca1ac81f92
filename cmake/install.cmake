# What `cmake --install` puts where (GNU layout), the package config that lets another project
# say find_package(arun CONFIG), and the Debian packages CPack builds from the same rules.
#
# Components: `runtime` is the command and what it reads at run time (package `arun`);
# `development` is headers, static libraries and the CMake package (package `libarun-dev`).
include(CMakePackageConfigHelpers)

set(ARUN_DATADIR ${CMAKE_INSTALL_DATADIR}/arun)
set(ARUN_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/arun)

if(ARUN_BUILD_CLI)
  install(TARGETS arun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  # share/arun: the fake agent (found there by --agent-cli fake), the JSON Schemas editors and
  # tools use, and the example recipes (found by `arun list` and by name).
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/fake-agent DESTINATION ${ARUN_DATADIR} COMPONENT runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/ DESTINATION ${ARUN_DATADIR}/schema COMPONENT runtime
          FILES_MATCHING PATTERN "*.json")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/recipes/ DESTINATION ${ARUN_DATADIR}/recipes COMPONENT runtime)
  # Completions and man pages, made from the binary being installed (now, if the build did not
  # make them) and written with the paths under the prefix installed to; it says what it
  # installed, or why there are no man pages (cmake/generated_docs.cmake).
  install(CODE "
    set(ARUN_INSTALLING TRUE)
    set(ARUN_BINARY \"$<TARGET_FILE:arun>\")
    set(ARUN_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
    set(ARUN_GENERATED \"${PROJECT_BINARY_DIR}/share\")
    set(ARUN_MANDIR \"${CMAKE_INSTALL_MANDIR}\")
    set(ARUN_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
    set(ARUN_DATADIR \"${ARUN_DATADIR}\")
    set(ARUN_SHAREDIR \"${CMAKE_INSTALL_DATADIR}\")
    include(\"${PROJECT_SOURCE_DIR}/cmake/generated_docs.cmake\")" COMPONENT runtime)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
          DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT runtime)
endif()

# The libraries and their headers: include/arun (the engine's API) and include/arun/io (the
# process step runner, recipe loader, session store; they include each other by their path
# below that folder, which arun::io puts on the include path).
# (arun_options, the warning and sanitizer flags, is linked as a BUILD_INTERFACE only: a host
# never inherits arun's -Werror or sanitizers.)
install(TARGETS arun_engine arun_io EXPORT arunTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/arun DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
# valijson_config.hpp is private to two .cpp files: shipping it would make libarun-dev need
# valijson's headers (docs/building.md, "valijson").
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/io/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/arun/io COMPONENT development
        FILES_MATCHING PATTERN "*.hpp" PATTERN "valijson_config.hpp" EXCLUDE)
install(EXPORT arunTargets NAMESPACE arun:: DESTINATION ${ARUN_CMAKEDIR} COMPONENT development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/arunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/arunConfig.cmake INSTALL_DESTINATION ${ARUN_CMAKEDIR})
# 0.x: a minor release may change the API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/arunConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/arunConfig.cmake ${PROJECT_BINARY_DIR}/arunConfigVersion.cmake
        DESTINATION ${ARUN_CMAKEDIR} COMPONENT development)

# Debian packages: `cpack -G DEB` in the build directory. Runtime
# dependencies come from dpkg-shlibdeps; the -dev package depends on the -dev packages of
# what arun's headers and static libraries need.
set(CPACK_PACKAGE_NAME arun)
set(CPACK_PACKAGE_VENDOR "arun")
set(CPACK_PACKAGE_CONTACT "arun maintainers <maintainers@arun.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "asynchronous recipe runner for bash and AI-agent steps")
set(CPACK_PACKAGE_DESCRIPTION "arun runs YAML recipes of bash commands, AI-agent CLI prompts and
sub-recipes concurrently on one event loop, with conditions, templates, retries, timeouts,
parallel groups, foreach fan-out, approvals and resumable sessions.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime development)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME arun)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "bash")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "git, python3")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libarun-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
    "libboost1.81-dev, libboost-json1.81-dev, libyaml-cpp-dev (>= 0.7), libspdlog-dev (>= 1:1.10), nettle-dev")
include(CPack)
