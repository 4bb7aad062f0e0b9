# `cmake --install BUILD --prefix PREFIX` places:
#   PREFIX/bin/commsim                          the command (it finds its presets from its own location)
#   PREFIX/share/commsim/configs/{topologies,models}/*.yaml
#   PREFIX/lib/libcommsim_model.a, libcommsim_collectives.a and PREFIX/include/commsim/{model,collectives}/
#   PREFIX/lib/cmake/commsim/                   the CMake package: find_package(commsim) gives
#                                               commsim::model (the cost model) and commsim::collectives
#                                               (the schedule generators)
include(CMakePackageConfigHelpers)
set(COMMSIM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/commsim)

install(TARGETS commsim_model commsim_collectives EXPORT commsimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/commsim)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/model/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/commsim/model
        FILES_MATCHING PATTERN "*.h")
# The generators' headers; the executors (host, cuda, ucx) need MPI, CUDA or UCX and are not installed.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/collectives/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/commsim/collectives
        FILES_MATCHING PATTERN "*.h" PATTERN "host" EXCLUDE PATTERN "cuda" EXCLUDE PATTERN "ucx" EXCLUDE)
install(EXPORT commsimTargets NAMESPACE commsim:: DESTINATION ${COMMSIM_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/commsimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/commsimConfig.cmake INSTALL_DESTINATION ${COMMSIM_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/commsimConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/commsimConfig.cmake ${PROJECT_BINARY_DIR}/commsimConfigVersion.cmake
        DESTINATION ${COMMSIM_INSTALL_CMAKEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/commsim/configs
        FILES_MATCHING PATTERN "*.yaml" PATTERN "*.md")
if(TARGET commsim)
  install(TARGETS commsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
