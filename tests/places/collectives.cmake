# Snapshots whose collectives match as OTF2 readers match them (included from CMakeLists.txt): every
# member of a communicator completed the same sequence of collective operations, MpiCollectiveBegin and
# End alternate inside one region, every completion refers to a request its location started
# (tests/harness/check-snapshot). With a 64 KiB buffer per rank, 4 ranks and 2 places, every strategy
# reduces each rank's trace on its own, so each trace holds collectives another member's lost: the export
# writes only the instances every member holds. Linked programs, so they run in the sanitizer build too.
if(TARGET otfx_example_common AND TARGET otfx-capture AND TARGET places_stencil_linked)
  add_executable(places_collectives_linked ${PROJECT_SOURCE_DIR}/examples/collectives.c)
  target_link_options(places_collectives_linked PRIVATE "LINKER:--no-as-needed")
  target_link_libraries(places_collectives_linked PRIVATE otfx-capture otfx_example_common)
  set(collectives_check ${CMAKE_CURRENT_LIST_DIR}/check-snapshot-at-exit --)
  set(collectives_env OTFX_PLACES=2 OTFX_BUFFER=64K HWLOC_COMPONENTS=-pci)
  set(collectives_expect "check-snapshot: OK" "verification OK" "snapshot at exit snapshot: [0-9] places ok, 0 failed"
      "otfx-place: rank 0 events .* (reduced|dropped)=[1-9]")
  foreach(strategy IN ITEMS ring time type depth stop)
    otfx_add_mpi_test(NAME places.collectives_${strategy}_linked_n4 RANKS 6 TIMEOUT 90
      LAUNCHER ${collectives_check} ${MPIEXEC_EXECUTABLE}
      COMMAND $<TARGET_FILE:places_collectives_linked> --iterations 300
      ENV ${collectives_env} OTFX_REDUCTION=${strategy}
      EXPECT_OUTPUT ${collectives_expect}
      REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  endforeach()
  # The stencil's blocking collectives among its messages (two strategies: a lossy stencil run takes
  # longer; places.pairs_* cover its messages).
  foreach(strategy IN ITEMS ring type)
    otfx_add_mpi_test(NAME places.collectives_stencil_${strategy}_linked_n4 RANKS 6 TIMEOUT 90
      LAUNCHER ${collectives_check} ${MPIEXEC_EXECUTABLE}
      COMMAND $<TARGET_FILE:places_stencil_linked> --iterations 2000
      ENV ${collectives_env} OTFX_REDUCTION=${strategy}
      EXPECT_OUTPUT ${collectives_expect}
      REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  endforeach()
endif()
