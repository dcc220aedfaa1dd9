# The common OTF2 snapshot of the event places (places/src/snapshot.c), included from
# tests/places/CMakeLists.txt. The test builds snapshot.c itself (its MPI part,
# place_snapshot_write_traces, needs no running place): three processes each hold otfx traces of a few
# ranks built in-process, with different region sets (one process's trace is reduced), write one archive
# and read it back with otf2-print, python3-otf2 and the otfx importer; path refusals are agreed by all.
add_executable(places_snapshot_mpi ${CMAKE_CURRENT_LIST_DIR}/test_snapshot_mpi.c
                                   ${PROJECT_SOURCE_DIR}/places/src/snapshot.c)
target_include_directories(places_snapshot_mpi PRIVATE ${PROJECT_SOURCE_DIR}/places/src
                           ${PROJECT_SOURCE_DIR}/places/include)
target_link_libraries(places_snapshot_mpi PRIVATE otfx_test_support otfx_support otfx_tbon_layout otfx_capture_wire PkgConfig::OTF2 MPI::MPI_C)
otfx_add_mpi_test(NAME places.snapshot RANKS 3 TIMEOUT 120
  COMMAND $<TARGET_FILE:places_snapshot_mpi>
  EXPECT_OUTPUT "snapshot-test: whole archive checked"
                "snapshot-test: window archive checked"
                "snapshot-test: refusals checked"
                "snapshot-test: passed")
