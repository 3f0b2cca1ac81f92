# No dead link in the manual, no web address, no file named that a clone does not have.
add_test(NAME "e2e: the manual's links all resolve inside the repository and name nothing outside it"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/links_test.py --repo ${PROJECT_SOURCE_DIR})
set_tests_properties("e2e: the manual's links all resolve inside the repository and name nothing outside it"
                     PROPERTIES LABELS e2e TIMEOUT 60)
# docs/cli.md is `arun … --help` as tools/gen-cli-reference writes it (the man pages' source).
add_test(NAME "e2e: docs/cli.md is the current --help of every command"
         COMMAND python3 ${PROJECT_SOURCE_DIR}/tools/gen-cli-reference --check $<TARGET_FILE:arun>
                 ${PROJECT_SOURCE_DIR}/docs/cli.md)
set_tests_properties("e2e: docs/cli.md is the current --help of every command" PROPERTIES LABELS e2e TIMEOUT 60)
# README.md's example recipe prints what README.md shows.
add_test(NAME "e2e: README.md's example recipe runs and prints what README.md shows"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/readme_test.py --arun $<TARGET_FILE:arun> --repo ${PROJECT_SOURCE_DIR})
set_tests_properties("e2e: README.md's example recipe runs and prints what README.md shows" PROPERTIES LABELS e2e TIMEOUT 60)
