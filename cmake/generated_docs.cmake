# The files made from the arun command itself: shell completions (`arun completions SHELL`)
# and man pages (help2man over `arun … --help`, tools/gen-manpages). Used twice:
#   - by the build, after each link of arun (src/cli/CMakeLists.txt runs it with -P): makes
#     them in BUILD/share;
#   - by `cmake --install` and cpack (cmake/install.cmake includes it with ARUN_INSTALLING set):
#     makes them first when the build did not (tools/run builds only the command) or they are
#     older than the binary, then installs them, writing the paths under the prefix being
#     installed to into the pages (a page names the manual where it is, whatever the prefix)
#     and saying what it did, or why there are no man pages.
# In: ARUN_BINARY, ARUN_SOURCE_DIR, ARUN_GENERATED (BUILD/share); when installing also
# ARUN_MANDIR, ARUN_DOCDIR, ARUN_DATADIR, ARUN_SHAREDIR (relative to the prefix, or absolute).
cmake_minimum_required(VERSION 3.25)

set(_arun_stamp "${ARUN_GENERATED}/generated.stamp")
set(_arun_pages "${ARUN_GENERATED}/man/man1")
# What the files are made from: a change to any of them makes them again.
set(_arun_inputs "${ARUN_BINARY}" "${ARUN_SOURCE_DIR}/tools/gen-manpages" "${ARUN_SOURCE_DIR}/tools/man/arun.h2m"
                 "${ARUN_SOURCE_DIR}/docs/reference/exit-codes.md" "${CMAKE_CURRENT_LIST_FILE}")
find_program(ARUN_HELP2MAN help2man)

# True when the files in BUILD/share are missing, or older than what they are made from.
function(arun_generated_stale out)
  file(GLOB pages "${_arun_pages}/*.1")
  set(stale FALSE)
  if(NOT EXISTS "${_arun_stamp}" OR (ARUN_HELP2MAN AND NOT pages))
    set(stale TRUE)
  endif()
  foreach(input IN LISTS _arun_inputs)
    if(NOT "${_arun_stamp}" IS_NEWER_THAN "${input}")
      set(stale TRUE)
    endif()
  endforeach()
  set(${out} ${stale} PARENT_SCOPE)
endfunction()

function(arun_make_generated)
  file(MAKE_DIRECTORY "${ARUN_GENERATED}/completions")
  foreach(shell_file IN ITEMS "bash:arun" "zsh:_arun" "fish:arun.fish")
    string(REPLACE ":" ";" pair "${shell_file}")
    list(GET pair 0 shell)
    list(GET pair 1 name)
    execute_process(COMMAND "${ARUN_BINARY}" completions ${shell} OUTPUT_FILE "${ARUN_GENERATED}/completions/${name}"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "arun: `${ARUN_BINARY} completions ${shell}` failed (${rc})")
    endif()
  endforeach()
  if(ARUN_HELP2MAN)
    execute_process(COMMAND "${ARUN_SOURCE_DIR}/tools/gen-manpages" "${ARUN_BINARY}" "${_arun_pages}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "arun: tools/gen-manpages failed (${rc})")
    endif()
  else()
    message(WARNING "arun: help2man not found: no man pages (apt-get install help2man)")
  endif()
  file(TOUCH "${_arun_stamp}")
endfunction()

# DIR under the install prefix, or DIR itself when absolute.
function(arun_installed_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

function(arun_install_generated)
  arun_generated_stale(stale)
  if(stale)
    message(STATUS "arun: making the completions and man pages from ${ARUN_BINARY} (the build had not made them, "
                   "or they are older than it)")
    arun_make_generated()
  endif()
  arun_installed_dir(share "${ARUN_SHAREDIR}")
  # The places Debian's bash-completion, zsh and fish read.
  file(INSTALL "${ARUN_GENERATED}/completions/arun" DESTINATION "${share}/bash-completion/completions")
  file(INSTALL "${ARUN_GENERATED}/completions/_arun" DESTINATION "${share}/zsh/vendor-completions")
  file(INSTALL "${ARUN_GENERATED}/completions/arun.fish" DESTINATION "${share}/fish/vendor_completions.d")

  file(GLOB pages "${_arun_pages}/*.1")
  if(NOT pages)
    message(WARNING "arun: no man pages installed: help2man is not installed (apt-get install help2man, "
                    "then run the install again)")
    return()
  endif()
  arun_installed_dir(mandir "${ARUN_MANDIR}")
  arun_installed_dir(docdir "${ARUN_DOCDIR}")
  arun_installed_dir(datadir "${ARUN_DATADIR}")
  # Written with this prefix's paths, then gzipped as Debian ships pages (-n: no name or time,
  # so the same page gives the same bytes).
  set(staged "${ARUN_GENERATED}/man-installed/man1")
  file(REMOVE_RECURSE "${staged}")
  file(MAKE_DIRECTORY "${staged}")
  set(compressed "")
  # In roff a path's \ is \e, and its - is \- (a plain - may print as a hyphen, which a
  # pasted path must not have).
  foreach(dir IN ITEMS docdir datadir)
    string(REPLACE "\\" "\\e" ${dir} "${${dir}}")
    string(REPLACE "-" "\\-" ${dir} "${${dir}}")
  endforeach()
  foreach(page IN LISTS pages)
    get_filename_component(name "${page}" NAME)
    file(READ "${page}" text)
    string(REPLACE "@ARUN_DOCDIR@" "${docdir}/docs" text "${text}")
    string(REPLACE "@ARUN_DATADIR@" "${datadir}" text "${text}")
    file(WRITE "${staged}/${name}" "${text}")
    execute_process(COMMAND gzip -9nf "${staged}/${name}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "arun: gzip ${staged}/${name} failed (${rc})")
    endif()
    list(APPEND compressed "${staged}/${name}.gz")
  endforeach()
  file(INSTALL ${compressed} DESTINATION "${mandir}/man1")
endfunction()

if(ARUN_INSTALLING)
  arun_install_generated()
else()
  arun_make_generated()
endif()
