# Every tutorial of docs/tutorials runs as written and prints what its page shows; each page's
# copy of its recipe equals the file in recipes/tutorials (conventions: tutorials_test.py).
add_test(NAME "e2e: every tutorial runs as written and prints what its page shows"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/tutorials_test.py --arun $<TARGET_FILE:arun> --repo ${PROJECT_SOURCE_DIR})
set_tests_properties("e2e: every tutorial runs as written and prints what its page shows" PROPERTIES LABELS e2e TIMEOUT 300)
