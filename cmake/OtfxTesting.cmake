# Test helpers shared by every component. Each registers tests with ctest under one label:
#   unit — cmocka unit tests          mpi  — programs under mpiexec
#   gui  — Qt programs under xvfb-run fuzz — fuzz targets run briefly
set(OTFX_HARNESS_DIR "${CMAKE_CURRENT_LIST_DIR}/../tests/harness")
cmake_path(NORMAL_PATH OTFX_HARNESS_DIR)
set(OTFX_SKIP_RETURN_CODE 77)
# MPICH and UCX keep allocations alive past MPI_Finalize on purpose; LeakSanitizer must not blame us.
set(OTFX_TEST_ENVIRONMENT
    "LSAN_OPTIONS=suppressions=${OTFX_HARNESS_DIR}/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
    "MPIR_CVAR_POLLS_BEFORE_YIELD=10"
    # hwloc's PCI plugin leaks and is unloaded before LeakSanitizer looks, so no suppression matches.
    "HWLOC_COMPONENTS=-pci")

# otfx_add_unit_test(NAME n SOURCES s... [LIBS l...] [TIMEOUT sec] [LABELS extra...])
function(otfx_add_unit_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "unit;${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       ENVIRONMENT "${OTFX_TEST_ENVIRONMENT}")
endfunction()

# otfx_add_mpi_test(NAME n RANKS r COMMAND cmd args... [TIMEOUT sec] [EXPECT_EXIT code]
#                   [EXPECT_OUTPUT regex...] [REJECT_OUTPUT regex...] [ENV VAR=value...]
#                   [LAUNCHER cmd...] [LABELS extra...])
# Runs `mpiexec -n r cmd args` through tests/harness/run-mpi, which exports
# MPIR_CVAR_POLLS_BEFORE_YIELD=10 (2 cores: without it oversubscribed ranks crawl), enforces the
# timeout inside mpiexec as well (MPIEXEC_TIMEOUT) so no rank outlives its test, and checks the exit
# code and output. LAUNCHER replaces mpiexec (e.g. otfx-run) and gets "-n r" as well.
function(otfx_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;RANKS;TIMEOUT;EXPECT_EXIT"
                        "COMMAND;EXPECT_OUTPUT;REJECT_OUTPUT;ENV;LAUNCHER;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT DEFINED T_EXPECT_EXIT)
    set(T_EXPECT_EXIT 0)
  endif()
  set(args --ranks ${T_RANKS} --timeout ${T_TIMEOUT} --expect-exit ${T_EXPECT_EXIT})
  if(T_LAUNCHER)
    list(JOIN T_LAUNCHER " " launcher)
    list(APPEND args --launcher "${launcher}")
  else()
    list(APPEND args --launcher "${MPIEXEC_EXECUTABLE}")
  endif()
  foreach(re IN LISTS T_EXPECT_OUTPUT)
    list(APPEND args --expect-output "${re}")
  endforeach()
  foreach(re IN LISTS T_REJECT_OUTPUT)
    list(APPEND args --reject-output "${re}")
  endforeach()
  add_test(NAME ${T_NAME} COMMAND ${OTFX_HARNESS_DIR}/run-mpi ${args} -- ${T_COMMAND})
  math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
  # More than one rank on 2 cores: run alone so timings and timeouts stay meaningful.
  set(cpus 1)
  if(T_RANKS GREATER 1)
    set(cpus 2)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "mpi;${T_LABELS}" TIMEOUT ${ctest_timeout}
                       PROCESSORS ${cpus} ENVIRONMENT "${OTFX_TEST_ENVIRONMENT};${T_ENV}")
endfunction()

# otfx_add_gui_test(NAME n COMMAND cmd args... [TIMEOUT sec] [ENV VAR=value...])
# Runs a Qt program under xvfb-run; skipped (ctest "Skipped", with the reason) only when Qt5 is absent.
function(otfx_add_gui_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(OTFX_HAVE_QT5 AND OTFX_XVFB_RUN)
    add_test(NAME ${T_NAME} COMMAND ${OTFX_HARNESS_DIR}/run-gui ${T_COMMAND})
  else()
    add_test(NAME ${T_NAME} COMMAND ${OTFX_HARNESS_DIR}/skip
             "Qt5 (qtbase5-dev) or xvfb-run not found: viewer test ${T_NAME} not run")
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS gui TIMEOUT ${T_TIMEOUT} PROCESSORS 2
                       SKIP_RETURN_CODE ${OTFX_SKIP_RETURN_CODE}
                       ENVIRONMENT "${OTFX_TEST_ENVIRONMENT};QT_QPA_PLATFORM=xcb;${T_ENV}")
endfunction()

# otfx_add_fuzz_target(NAME n SOURCES s... [LIBS l...] CORPUS dir [SECONDS sec])
# The source defines LLVMFuzzerTestOneInput. In the sanitizer build with clang it is a libFuzzer binary
# that fuzzes for SECONDS; otherwise it links tests/harness/fuzz_replay.c, which replays the corpus and
# a fixed number of deterministic random inputs (a regression test, not a fuzzer).
function(otfx_add_fuzz_target)
  cmake_parse_arguments(T "" "NAME;CORPUS;SECONDS" "SOURCES;LIBS" ${ARGN})
  if(NOT T_SECONDS)
    set(T_SECONDS 20)
  endif()
  if(OTFX_FUZZ_ENGINE STREQUAL "libfuzzer")
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_options(${T_NAME} PRIVATE -fsanitize=fuzzer)
    set(work "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}.corpus")
    file(MAKE_DIRECTORY "${work}")
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} -max_total_time=${T_SECONDS} -seed=1 -print_final_stats=1
                                    -rss_limit_mb=1024 "${work}" "${T_CORPUS}")
  else()
    add_executable(${T_NAME} ${T_SOURCES} ${OTFX_HARNESS_DIR}/fuzz_replay.c)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --random 20000 "${T_CORPUS}")
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS})
  math(EXPR ctest_timeout "${T_SECONDS} * 3 + 60")
  set_tests_properties(${T_NAME} PROPERTIES LABELS fuzz TIMEOUT ${ctest_timeout}
                       ENVIRONMENT "${OTFX_TEST_ENVIRONMENT}")
endfunction()

# otfx_component(NAME name BUILT ON|OFF WHAT "one line")
# Records which parts of the pipeline this build contains; ci/demo and `otfx-run` read the list
# from ${PROJECT_BINARY_DIR}/otfx-components.txt to say plainly what is not built yet.
function(otfx_component)
  cmake_parse_arguments(C "" "NAME;BUILT" "WHAT" ${ARGN})
  list(JOIN C_WHAT "," C_WHAT) # a ';' in the text would split the line into list elements
  if(C_BUILT)
    set(line "${C_NAME}: built — ${C_WHAT}")
  else()
    set(line "${C_NAME}: not built yet — ${C_WHAT}")
    message(STATUS "otfx: ${line}")
  endif()
  set_property(GLOBAL APPEND PROPERTY OTFX_COMPONENT_LINES "${line}")
endfunction()
