# docs/reference/*.md against the code: every schema field and loader key is documented in
# recipe.md, every condition function and method in conditions.md, every example recipe
# validates (some also run, with their documented output), and every link resolves.
add_test(NAME "e2e: the recipe reference documents every schema field, builtin and method, and its examples validate"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference_test.py --arun $<TARGET_FILE:arun> --repo ${PROJECT_SOURCE_DIR})
set_tests_properties("e2e: the recipe reference documents every schema field, builtin and method, and its examples validate" PROPERTIES LABELS e2e TIMEOUT 300)
