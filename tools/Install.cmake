# tools/Install.cmake: what `cmake --install BUILD --prefix P` lays out (the normal build; the bundle's is
# tools/Bundle.cmake), a package that C++ programs use with find_package(tgc) and target_link_libraries(app
# tgc::tgc) (examples/embed/):
#
#   P/bin/tgc                    the command (tgc compile --emit=lib finds the AOT runtime in P/lib)
#   P/include/tgc/tgc.h          the library API: api/Api.h (compile, run, step a script), api/Library.h
#                                (libraries made ahead of time), io/Npy.h, runtime/Print.h, and what they
#                                include, under P/include/tgc/ as in the source tree
#   P/lib/libtgc.so              tgc's libraries (tg_api and all below it), exporting tg:: only
#   P/lib/libtgc_aot_runtime.a   the runtime that libraries made by tgc compile --emit=lib link
#   P/lib/libtgc_mpi.so          what a run under mpirun loads (runtime/mpi/), linked with the machine's MPI
#   P/lib/cmake/tgc/             tgcConfig.cmake (the imported target tgc::tgc; tgc_add_library(NAME SCRIPT):
#                                a script compiled ahead of time at build time, as tgc::NAME) and its version
#   P/lib/*.so*                  every library those load but the base system's (LLVM, ANTLR's runtime,
#                                OpenBLAS, oneDNN, libgomp, libedit, ...), found through RPATHs of $ORIGIN and
#                                $ORIGIN/../lib: the prefix works where the build's packages are not installed
#                                (tests/e2e/cmake_package.py checks it so)
set(TGC_SHARED_LIBRARIES tg_api tg_frontend tg_stdlib tg_grammar tg_autodiff tg_io tg_opt tg_runtime tg_kernels
    tg_codegen tg_ir)
set(objects)
foreach(library ${TGC_SHARED_LIBRARIES})
  list(APPEND objects $<TARGET_OBJECTS:${library}>)
endforeach()
add_library(tgc_shared SHARED ${objects})
# The archives' own dependencies (LLVM, ANTLR, BLAS, ...); their members are all in the library already.
target_link_libraries(tgc_shared PRIVATE ${TGC_SHARED_LIBRARIES})
file(WRITE ${CMAKE_BINARY_DIR}/tgc_shared.map
     "{ global: extern \"C++\" { tg::*; }; _ZTVN2tg*; _ZTIN2tg*; _ZTSN2tg*; local: *; };\n")
set_property(TARGET tgc_shared APPEND PROPERTY LINK_DEPENDS ${CMAKE_BINARY_DIR}/tgc_shared.map)
target_link_options(tgc_shared PRIVATE -Wl,--version-script=${CMAKE_BINARY_DIR}/tgc_shared.map -Wl,-z,defs
                    -Wl,--disable-new-dtags)
set_target_properties(tgc_shared PROPERTIES OUTPUT_NAME tgc LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                                            INSTALL_RPATH "\$ORIGIN")
# RPATH, not RUNPATH: the loader then searches P/lib for the dependencies of dependencies too (libgfortran).
target_link_options(tgc PRIVATE -Wl,--disable-new-dtags)
set_target_properties(tgc PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib")

install(TARGETS tgc tgc_shared RUNTIME_DEPENDENCY_SET tgc_dependencies RUNTIME DESTINATION bin
        LIBRARY DESTINATION lib)
# Every Linux has these (and glibc must be the machine's own).
install(RUNTIME_DEPENDENCY_SET tgc_dependencies
        PRE_EXCLUDE_REGEXES
          "^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libdl|librt|libpthread|libutil|libresolv|libstdc\\+\\+|libgcc_s|libz|libzstd|liblzma|libtinfo)\\.so.*"
        DIRECTORIES ${LLVM_LIBRARY_DIR}
        LIBRARY DESTINATION lib)
install(FILES ${CMAKE_BINARY_DIR}/lib/libtgc_aot_runtime.a DESTINATION lib)
# The MPI of a run under mpirun is the machine's own (the one its mpirun belongs to): the plugin goes in the
# prefix, the MPI libraries it links do not.
install(TARGETS tgc_mpi LIBRARY DESTINATION lib)

# The headers of the library API: those api/Api.h, api/Library.h, io/Npy.h and runtime/Print.h include
# (tests/e2e/cmake_package.py compiles examples/embed against them).
set(TGC_PUBLIC_HEADERS api/Api.h api/Library.h io/Npy.h runtime/Print.h ir/DType.h ir/DTypes.def ir/Graph.h
    ir/Op.h ir/Ops.def ir/Program.h ir/SmallVector.h ir/SourceLoc.h ir/TensorData.h ir/Type.h opt/CostModel.h
    opt/Pipeline.h opt/Rewrite.h runtime/Device.h runtime/Executor.h runtime/HostAllocator.h runtime/Tensor.h)
foreach(header ${TGC_PUBLIC_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${header} DESTINATION include/tgc/${folder})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/tools/tgc.h DESTINATION include/tgc)

include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tgcConfigVersion.cmake COMPATIBILITY SameMinorVersion)
configure_file(${CMAKE_SOURCE_DIR}/tools/tgcConfig.cmake.in ${CMAKE_BINARY_DIR}/tgcConfig.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tgcConfig.cmake ${CMAKE_BINARY_DIR}/tgcConfigVersion.cmake
        DESTINATION lib/cmake/tgc)
