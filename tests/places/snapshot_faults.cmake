# Snapshots into places that cannot hold them (places/src/snapshot.c, otfx/src/otf2_export.c): a
# read-only file system, a full one (twice), a tiny one, OTF2 failing to create the archive's directory;
# each fails on every process with the system's reason and leaves nothing behind, and a snapshot into a
# good directory afterwards is read by otf2-print. Real file systems: tests/harness/with-scratch-mounts
# mounts them in a mount namespace of the test's own (root only; skipped with the reason otherwise).
# Built from snapshot.c like places.snapshot, so it runs in the sanitizer build too.
add_executable(places_snapshot_faults_mpi ${CMAKE_CURRENT_LIST_DIR}/test_snapshot_faults_mpi.c
                                          ${PROJECT_SOURCE_DIR}/places/src/snapshot.c)
target_include_directories(places_snapshot_faults_mpi PRIVATE ${PROJECT_SOURCE_DIR}/places/src
                           ${PROJECT_SOURCE_DIR}/places/include)
target_link_libraries(places_snapshot_faults_mpi PRIVATE otfx otfx_support otfx_tbon_layout otfx_capture_wire PkgConfig::OTF2 MPI::MPI_C)
set(snapshot_faults_scratch ${CMAKE_CURRENT_BINARY_DIR}/snapshot-faults)
otfx_add_mpi_test(NAME places.snapshot_disk_faults RANKS 2 TIMEOUT 120
  LAUNCHER ${OTFX_HARNESS_DIR}/with-scratch-mounts ${snapshot_faults_scratch} -- ${MPIEXEC_EXECUTABLE}
  COMMAND $<TARGET_FILE:places_snapshot_faults_mpi> ${snapshot_faults_scratch}
  EXPECT_OUTPUT "snapshot-faults: read-only: OTF2 export: cannot create .*/ro/trace: Read-only file system"
                "snapshot-faults: full disk: .*No space left on device"
                "snapshot-faults: full disk again: .*No space left on device"
                "snapshot-faults: tiny disk: .*No space left on device"
                "snapshot-faults: OTF2 cannot create the archive: "
                "snapshot-faults: a good directory afterwards: .*/good/trace.otf2, [1-9][0-9]* events here, read by otf2-print"
                "snapshot-faults: full disk, big definitions: .*No space left on device"
                "snapshot-faults: big definitions afterwards: [0-9]+ bytes of global definitions"
                "snapshot-faults: passed"
  REJECT_OUTPUT "ERROR: AddressSanitizer" "runtime error")
set_tests_properties(places.snapshot_disk_faults PROPERTIES SKIP_RETURN_CODE ${OTFX_SKIP_RETURN_CODE})
