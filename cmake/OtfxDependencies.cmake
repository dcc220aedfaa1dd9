# Every third-party library is found once here, so components only name imported targets.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(MPI REQUIRED COMPONENTS C)

check_language(Fortran)
if(CMAKE_Fortran_COMPILER)
  enable_language(Fortran)
  find_package(MPI COMPONENTS Fortran)
endif()

pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(OTF2 REQUIRED IMPORTED_TARGET otf2)
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent libevent_pthreads)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
# User-function names on the event places (libdwfl reads the application's symbol tables).
pkg_check_modules(LIBDW REQUIRED IMPORTED_TARGET libdw)
find_package(ZLIB REQUIRED)
# PAPI preset metrics (papi:PAPI_TOT_CYC, …; docs/usage.md, "Metrics"): optional. Without it a papi: name
# is refused with the reason that otfx was built without PAPI.
option(OTFX_WITH_PAPI "read PAPI preset metrics where libpapi is installed" ON)
set(OTFX_HAVE_PAPI OFF)
if(OTFX_WITH_PAPI)
  pkg_check_modules(PAPI QUIET IMPORTED_TARGET papi)
  if(PAPI_FOUND)
    set(OTFX_HAVE_PAPI ON)
  endif()
endif()
message(STATUS "otfx: PAPI metrics ${OTFX_HAVE_PAPI}")

set(OTFX_HAVE_QT5 OFF)
if(OTFX_BUILD_GUI)
  find_package(Qt5 5.15 COMPONENTS Widgets Network Test QUIET)
  if(Qt5_FOUND)
    set(OTFX_HAVE_QT5 ON)
  else()
    message(STATUS "otfx: Qt5 (qtbase5-dev) not found: the viewer is not built, gui tests are skipped")
  endif()
endif()

find_program(OTFX_XVFB_RUN xvfb-run)
find_program(OTFX_OTF2_PRINT otf2-print)
find_program(OTFX_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
