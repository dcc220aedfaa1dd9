# Every example's snapshot at exit is a consistent trace (check-snapshot: nesting, time order, requests,
# messages paired by order per channel with their sizes and send before receive, collective sequences
# identical on every member): whole traces, and reduced with each strategy at the smallest buffer, on 2 to
# 8 ranks with 1 to 3 event places. otfx-run preloads the library: the normal build only.
# example|mode|ranks|places|iterations: each example whole (lossless) and reduced by each strategy, on
# shapes spread over 2-8 ranks and 1-3 places, with enough iterations for 64 KiB per rank to fill.
set(snapshot_matrix
    collectives|lossless|2|1|400 collectives|ring|4|2|400 collectives|time|8|3|400
    collectives|type|3|1|400 collectives|depth|6|2|400 collectives|stop|5|3|400
    master_worker|lossless|4|2|1000 master_worker|ring|8|3|1000 master_worker|time|3|1|1000
    master_worker|type|6|2|1000 master_worker|depth|5|3|1000 master_worker|stop|2|1|1000
    fortran_ring|lossless|8|3|2000 fortran_ring|ring|3|1|6000 fortran_ring|time|6|2|2000
    fortran_ring|type|5|3|2000 fortran_ring|depth|2|1|8000 fortran_ring|stop|4|2|4000
    stencil_instrumented|lossless|3|1|300 stencil_instrumented|ring|6|2|300 stencil_instrumented|time|5|3|300
    stencil_instrumented|type|2|1|300 stencil_instrumented|depth|4|2|300 stencil_instrumented|stop|8|3|300
    stencil|lossless|6|2|1500 stencil|ring|5|3|1500 stencil|time|2|1|5000
    stencil|type|4|2|2500 stencil|depth|8|3|1500 stencil|stop|3|1|4000)
set(snapshot_matrix_check ${CMAKE_CURRENT_SOURCE_DIR}/check_snapshot_of_run.py)
foreach(entry IN LISTS snapshot_matrix)
  string(REPLACE "|" ";" entry "${entry}")
  list(GET entry 0 example)
  list(GET entry 1 mode)
  list(GET entry 2 ranks)
  list(GET entry 3 places)
  list(GET entry 4 iterations)
  if(NOT TARGET example_${example})
    continue()
  endif()
  set(name places.snapshot_consistent_${example}_${mode}_n${ranks}_p${places})
  if(OTFX_SANITIZE OR NOT EXISTS ${OTFX_SYSTEM_PYTHON})
    add_test(NAME ${name} COMMAND ${OTFX_HARNESS_DIR}/skip
             "otfx-run (LD_PRELOAD) and /usr/bin/python3 with python3-otf2 are needed: the normal build runs it")
    set_tests_properties(${name} PROPERTIES LABELS mpi SKIP_RETURN_CODE ${OTFX_SKIP_RETURN_CODE})
    continue()
  endif()
  set(lossy)
  if(NOT mode STREQUAL "lossless")
    set(lossy --buffer 64K --reduction ${mode})
  endif()
  add_test(NAME ${name}
           COMMAND ${OTFX_SYSTEM_PYTHON} ${snapshot_matrix_check} --otfx-run $<TARGET_FILE:otfx-run>
                   --checker ${OTFX_HARNESS_DIR}/check-snapshot --work ${CMAKE_CURRENT_BINARY_DIR}/matrix/${name}
                   --ranks ${ranks} --places ${places} ${lossy}
                   -- $<TARGET_FILE:example_${example}> --iterations ${iterations})
  set_tests_properties(${name} PROPERTIES LABELS mpi TIMEOUT 700 PROCESSORS 2
                       PASS_REGULAR_EXPRESSION "\nPASS\n" FAIL_REGULAR_EXPRESSION "\nFAIL: "
                       ENVIRONMENT "${OTFX_TEST_ENVIRONMENT}")
endforeach()
