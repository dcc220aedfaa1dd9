# Every example's snapshot at exit is a consistent trace (check-snapshot: nesting, time order, requests,
# messages paired by order per channel with their sizes and send before receive, collective sequences
# identical on every member): whole traces, and reduced with each strategy at the smallest buffer, on 2 to
# 8 ranks with 1 to 3 event places. otfx-run preloads the library: the normal build only.
# example|mode|ranks|places|iterations: each example whole (lossless) and reduced by each strategy, on
# shapes spread over 2-8 ranks and 1-3 places, with enough iterations for 64 KiB per rank to fill however
# well the events compress (regular timings on an idle machine pack them tighter than a loaded one's);
# whole traces need no more iterations than show every kind of call.
set(snapshot_matrix
    collectives|lossless|2|1|400 collectives|ring|4|2|400 collectives|time|8|3|400
    collectives|type|3|1|400 collectives|depth|6|2|400 collectives|stop|5|3|400
    master_worker|lossless|4|2|300 master_worker|ring|8|3|1000 master_worker|time|3|1|1000
    master_worker|type|6|2|1000 master_worker|depth|5|3|1000 master_worker|stop|2|1|1000
    fortran_ring|lossless|8|3|1000 fortran_ring|ring|3|1|6000 fortran_ring|time|6|2|2000
    fortran_ring|type|5|3|2000 fortran_ring|depth|2|1|8000 fortran_ring|stop|4|2|4000
    stencil_instrumented|lossless|3|1|150 stencil_instrumented|ring|6|2|300 stencil_instrumented|time|5|3|300
    stencil_instrumented|type|2|1|300 stencil_instrumented|depth|4|2|300 stencil_instrumented|stop|8|3|300
    stencil|lossless|6|2|500 stencil|ring|5|3|1500 stencil|time|2|1|5000
    stencil|type|4|2|2500 stencil|depth|8|3|1500 stencil|stop|3|1|4000)
# check-snapshot-at-exit runs otfx-run with a snapshot at exit and checks it; a lossy run must also have
# filled its buffer (reduced, or with `stop` dropped, events on some rank), else it proves nothing.
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
  set(lossy)
  set(filled)
  if(mode STREQUAL "stop")
    set(lossy --buffer 64K --reduction stop)
    set(filled "otfx-place: rank [0-9]+ events .* dropped=[1-9]")
  elseif(NOT mode STREQUAL "lossless")
    set(lossy --buffer 64K --reduction ${mode})
    set(filled "otfx-place: rank [0-9]+ events .* reduced=[1-9]")
  endif()
  capture_preload_test(NAME places.snapshot_consistent_${example}_${mode}_n${ranks}_p${places} RANKS ${ranks}
    TIMEOUT 600
    LAUNCHER ${CMAKE_CURRENT_LIST_DIR}/check-snapshot-at-exit -- $<TARGET_FILE:otfx-run> --places ${places} ${lossy}
    COMMAND $<TARGET_FILE:example_${example}> --iterations ${iterations}
    EXPECT_OUTPUT "check-snapshot: OK" "otfx: snapshot at exit snapshot: [1-9][0-9]* places ok, 0 failed" ${filled}
    REJECT_OUTPUT "FAIL")
endforeach()
