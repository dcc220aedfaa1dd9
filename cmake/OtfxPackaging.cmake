# Installation: libraries, public headers and programs are installed by their components; this adds
# the CMake package (find_package(otfx) → otfx::otfx) and the pkg-config file otfx.pc.
include(CMakePackageConfigHelpers)
set(OTFX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/otfx)
install(EXPORT otfxTargets NAMESPACE otfx:: DESTINATION ${OTFX_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/otfxConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/otfxConfig.cmake INSTALL_DESTINATION ${OTFX_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/otfxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/otfxConfig.cmake ${PROJECT_BINARY_DIR}/otfxConfigVersion.cmake
        DESTINATION ${OTFX_CMAKE_DIR})

file(RELATIVE_PATH OTFX_PC_UP "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" OTFX_PC_UP "${OTFX_PC_UP}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/otfx.pc.in ${PROJECT_BINARY_DIR}/otfx.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/otfx.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

get_property(component_lines GLOBAL PROPERTY OTFX_COMPONENT_LINES)
list(JOIN component_lines "\n" component_text)
file(WRITE ${PROJECT_BINARY_DIR}/otfx-components.txt "${component_text}\n")
