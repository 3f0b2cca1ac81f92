# The JSON that arun prints and writes (events, run results, the documents of validate,
# explain, --dry-run, list, agents list, sessions and config) matches the JSON Schemas in
# schema/, and the schemas cover every event kind, status and diagnostic code the code has
# (docs/reference/formats.md).
add_test(NAME "e2e: events and results match their published JSON Schemas"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/formats_test.py --arun $<TARGET_FILE:arun> --repo ${PROJECT_SOURCE_DIR})
set_tests_properties("e2e: events and results match their published JSON Schemas" PROPERTIES LABELS e2e TIMEOUT 300)
