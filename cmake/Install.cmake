# Installation: headers, static libraries, the `flexgraph` binary and flexgraphConfig.cmake, so
# models can be built outside the tree:
#
#   find_package(flexgraph REQUIRED)
#   add_library(mymodel MODULE model.cc)                 # a --udf_library plugin
#   target_link_libraries(mymodel PRIVATE flexgraph::plugin)
#
# flexgraph::plugin carries include paths only (the `flexgraph` binary provides the symbols);
# flexgraph::runtime and the other library targets link FlexGraph into a program of your own.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FG_INSTALL_TARGETS fg_core fg_hdg fg_sampling fg_nau fg_partition fg_comm fg_tasks fg_grid fg_distributed fg_plan fg_train
    fg_cluster fg_runtime fg_proto fg_udf_examples
    fg_openblas fg_metis fg_plugin)
install(TARGETS ${FG_INSTALL_TARGETS} EXPORT flexgraphTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flexgraph)
install(TARGETS flexgraph RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir flexgraph hdg sampling nau partition runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flexgraph/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/proto/text_format.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flexgraph/proto)
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/proto/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flexgraph/proto FILES_MATCHING PATTERN "*.h")
# Generated headers are included as "proto/x.pb.h" relative to the include root.
target_include_directories(fg_proto PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/flexgraph>)

install(EXPORT flexgraphTargets NAMESPACE flexgraph:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flexgraph)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/flexgraphConfig.cmake.in
  ${PROJECT_BINARY_DIR}/flexgraphConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flexgraph)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/flexgraphConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/flexgraphConfig.cmake ${PROJECT_BINARY_DIR}/flexgraphConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flexgraph)
