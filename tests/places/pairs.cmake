# Snapshots whose point-to-point messages pair as OTF2 readers pair them (included from CMakeLists.txt):
# the n-th send of a (sender, receiver, communicator, tag) is the n-th receive, of the same size, sent no
# later than 1 ms after it was received, and request ids unique among a rank's outstanding requests
# (check-snapshot-at-exit, tests/harness/check-snapshot). With a 64 KiB buffer per rank the ranks' traces are
# reduced each on its own (ring: the oldest detail; type: classes thinned), so a snapshot holds ends whose
# other end is gone: the export leaves those out. And with recording paused and resumed mid-run by
# otfxctl: the ranks stop and restart at slightly different moments, yet count their messages throughout.
# The minimum counts of paired messages hold at any speed: the programs run a number of iterations (or,
# paused, until the place holds enough events), never a number of seconds.
# Linked programs, so they run in the sanitizer build too.
if(TARGET otfx_example_common AND TARGET otfx-capture AND TARGET places_stencil_linked)
  add_executable(places_master_worker_linked ${PROJECT_SOURCE_DIR}/examples/master_worker.c)
  target_link_options(places_master_worker_linked PRIVATE "LINKER:--no-as-needed")
  target_link_libraries(places_master_worker_linked PRIVATE otfx-capture otfx_example_common)
  set(pairs_check ${CMAKE_CURRENT_LIST_DIR}/check-snapshot-at-exit)
  set(pairs_env OTFX_PLACES=1 OTFX_BUFFER=64K HWLOC_COMPONENTS=-pci)
  set(pairs_expect "check-snapshot: OK" "otfx: snapshot at exit snapshot: 1 places ok, 0 failed")
  set(pairs_clock_lines)
  foreach(rank IN ITEMS 0 1 2 3)
    list(APPEND pairs_clock_lines
         "otfx-place: rank ${rank} clock .* pairs_checked=[1-9][0-9]* .* worst_inversion_ns=([0-9]|[1-9][0-9]{1,5}) ")
  endforeach()
  foreach(strategy IN ITEMS ring type)
    # The place's own check pairs by channel and ordinal too: no inversion beyond the clocks' agreement
    # (on reduced traces it used to pair shifted ends: nearly every pair inverted, by up to 0.6 s).
    otfx_add_mpi_test(NAME places.pairs_stencil_${strategy}_linked_n4 RANKS 5 TIMEOUT 90
      LAUNCHER ${pairs_check} --min-messages 1000 -- ${MPIEXEC_EXECUTABLE}
      COMMAND $<TARGET_FILE:places_stencil_linked> --iterations 3000
      ENV ${pairs_env} OTFX_REDUCTION=${strategy}
      EXPECT_OUTPUT ${pairs_expect} "verification OK" "otfx-place: rank 0 events .* reduced=[1-9]"
                    ${pairs_clock_lines}
      REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
    otfx_add_mpi_test(NAME places.pairs_master_worker_${strategy}_linked_n4 RANKS 5 TIMEOUT 90
      LAUNCHER ${pairs_check} --min-messages 1000 -- ${MPIEXEC_EXECUTABLE}
      COMMAND $<TARGET_FILE:places_master_worker_linked> --iterations 600
      ENV ${pairs_env} OTFX_REDUCTION=${strategy}
      EXPECT_OUTPUT ${pairs_expect} "verification OK" "otfx-place: rank 0 events .* reduced=[1-9]"
      REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  endforeach()
  # A rank whose clock runs 2000 ppm fast (test knobs, no re-synchronisation): its messages invert by up
  # to milliseconds against the others'; the export moves the receives (docs/otfx-format.md, "Clock
  # condition"), so the snapshot has none, lossy (a 64 KiB ring) or whole, and says how many moved.
  set(skewed_env OTFX_TIMER=tsc OTFX_TEST_CLOCK_SKEW_PPM=2000 OTFX_TEST_CLOCK_SKEW_RANK=1 OTFX_CLOCK_SYNC=0)
  otfx_add_mpi_test(NAME places.pairs_skewed_clock_lossy_linked_n4 RANKS 6 TIMEOUT 90
    LAUNCHER ${pairs_check} --min-messages 1000 -- ${MPIEXEC_EXECUTABLE}
    COMMAND $<TARGET_FILE:places_stencil_linked> --iterations 3000
    ENV ${pairs_env} OTFX_PLACES=2 OTFX_REDUCTION=ring ${skewed_env}
    EXPECT_OUTPUT "check-snapshot: OK" "verification OK" "places ok, 0 failed"
                  "command=snapshot ok=1 .* clock_moved=[1-9][0-9]* clock_max_ns=[1-9][0-9]* clock_unresolved=0 "
    REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  otfx_add_mpi_test(NAME places.pairs_skewed_clock_whole_linked_n4 RANKS 5 TIMEOUT 90
    LAUNCHER ${pairs_check} --min-messages 1000 -- ${MPIEXEC_EXECUTABLE}
    COMMAND $<TARGET_FILE:places_stencil_linked> --iterations 1000
    ENV OTFX_PLACES=1 HWLOC_COMPONENTS=-pci ${skewed_env}
    EXPECT_OUTPUT "check-snapshot: OK" "verification OK" "places ok, 0 failed"
                  "command=snapshot ok=1 .* unpaired=0 clock_moved=[1-9][0-9]* clock_max_ns=[1-9][0-9]* clock_unresolved=0 "
    REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  # Every kind of point-to-point call (p2p_mix.c: MPI_Isendrecv and MPI_Isendrecv_replace, persistent
  # requests, matched probes, MPI_Issend to MPI_ANY_SOURCE, MPI_Testsome, MPI_PROC_NULL, a cancelled
  # receive) on 3 ranks: whole traces, then reduced.
  add_executable(places_p2p_mix_linked p2p_mix.c)
  target_link_options(places_p2p_mix_linked PRIVATE "LINKER:--no-as-needed")
  target_link_libraries(places_p2p_mix_linked PRIVATE otfx-capture MPI::MPI_C)
  otfx_add_mpi_test(NAME places.pairs_p2p_mix_linked_n3 RANKS 4 TIMEOUT 90
    LAUNCHER ${pairs_check} --min-messages 2000 -- ${MPIEXEC_EXECUTABLE}
    COMMAND $<TARGET_FILE:places_p2p_mix_linked> 200
    ENV OTFX_PLACES=1 HWLOC_COMPONENTS=-pci
    EXPECT_OUTPUT "check-snapshot: OK" "p2p-mix: rank 0 rounds=200 OK" "p2p-mix: rank 2 rounds=200 OK"
                  "command=snapshot ok=1 .* unpaired=0 "
    REJECT_OUTPUT "malformed" "FAIL" "check failed" "ERROR: AddressSanitizer" "runtime error")
  otfx_add_mpi_test(NAME places.pairs_p2p_mix_ring_linked_n3 RANKS 4 TIMEOUT 90
    LAUNCHER ${pairs_check} --min-messages 1000 -- ${MPIEXEC_EXECUTABLE}
    COMMAND $<TARGET_FILE:places_p2p_mix_linked> 1000
    ENV ${pairs_env} OTFX_REDUCTION=ring
    EXPECT_OUTPUT ${pairs_expect} "p2p-mix: rank 0 rounds=1000 OK" "otfx-place: rank 0 events .* reduced=[1-9]"
    REJECT_OUTPUT "malformed" "FAIL" "check failed" "ERROR: AddressSanitizer" "runtime error")
  if(TARGET otfxctl)
    # Paused once the place holds 10000 events, resumed, ended once it holds 40000 more (the stencil runs
    # until check-snapshot-at-exit's stop file): messages on both sides of the pause, at any speed. The 4
    # ranks' open batches (100 KiB, some 7000 stencil events each) arrive after the pause, so 40000 leave
    # at least 12000 recorded after it; the stencil has about one message per 11 events.
    otfx_add_mpi_test(NAME places.pairs_paused_stencil_linked_n4 RANKS 5 TIMEOUT 300
      LAUNCHER ${pairs_check} --pause $<TARGET_FILE:otfxctl> 10000 40000 --min-messages 1000
               -- ${MPIEXEC_EXECUTABLE}
      COMMAND $<TARGET_FILE:places_stencil_linked> --iterations 1
      ENV OTFX_PLACES=1 HWLOC_COMPONENTS=-pci
      EXPECT_OUTPUT "check-snapshot: OK" "verification OK" "command=record"
      REJECT_OUTPUT "malformed" "FAIL" "ERROR: AddressSanitizer" "runtime error")
  endif()
endif()
