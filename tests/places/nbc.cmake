# Nonblocking collectives end to end (included from CMakeLists.txt): nbc_collectives, linked (so it runs in
# the sanitizer build too), on 2 application ranks and 1 place, with a snapshot at exit. check-nbc: the
# places hold exactly the calls the program counted (compare-calls), otf2-print reads the snapshot, and
# every collective the program started shows as a NonBlockingCollectiveRequest in the starting call
# (MPI_Start, MPI_Startall, MPI_I<collective>) paired by request id with a NonBlockingCollectiveComplete
# in the Wait/Test call that completed it, with the right operation, communicator, root and bytes;
# the blocking MPI_Barrier stays an MpiCollectiveBegin/End pair.
#
# Persistent collectives (completed by two MPI_Wait, and by one MPI_Waitall) and MPI_Ibcast,
# MPI_Iallreduce, MPI_Ibarrier.
if(TARGET otfx_example_common AND TARGET otfx-capture)
  add_executable(places_nbc_collectives_linked nbc_collectives.c)
  target_link_options(places_nbc_collectives_linked PRIVATE "LINKER:--no-as-needed")
  target_link_libraries(places_nbc_collectives_linked PRIVATE otfx-capture otfx_example_common)
  otfx_add_mpi_test(NAME places.nbc_snapshot_linked_n2 RANKS 3 TIMEOUT 60
    LAUNCHER ${CMAKE_CURRENT_SOURCE_DIR}/check-nbc --app-ranks 2 ${MPIEXEC_EXECUTABLE}
    COMMAND $<TARGET_FILE:places_nbc_collectives_linked> --icollectives
    ENV OTFX_PLACES=1 HWLOC_COMPONENTS=-pci
    EXPECT_OUTPUT "compare-calls: all 2 ranks" "nbc-collectives: rank 0 blocking=1 nonblocking=[1-9][0-9]* half=0 OK"
                  "nbc-collectives: rank 1 blocking=1 nonblocking=[1-9][0-9]* half=1 OK" "check-nbc: OK: 2 ranks"
    REJECT_OUTPUT "malformed" "check failed" "FAIL")
endif()
