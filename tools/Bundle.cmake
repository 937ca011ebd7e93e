# tools/Bundle.cmake: the build that tools/bundle.sh packs (included by CMakeLists.txt with -DTGC_BUNDLE=ON).
#
#   bin/tgc               ─┐                   tgc's static libraries, whole,  ┌─> lib/libantlr4-runtime.so.4.9
#   bench/gpu              ├─> lib/libtgc.so:  and the static LLVM components ─┼─> lib/libopenblas.so.0 ─> libgfortran
#   tests/tgc_unit_tests  ─┘                   they call; exports tg:: only    ├─> lib/libdnnl.so.2 ─> libOpenCL
#                                                                              ├─> lib/libgomp.so.1
#                                                                              └─> lib/libedit.so.2 ─> libbsd, libmd
#
# One shared library holds LLVM, so that three binaries do not carry three copies of it. Every binary and library
# has an RPATH (not a RUNPATH) of $ORIGIN/../lib or $ORIGIN: glibc searches an executable's RPATH for the
# dependencies of its dependencies too (libopenblas's libgfortran), and libtgc.so's own for what it opens with
# dlopen (the unit tests' fake CUDA driver; libcuda.so.1 and cuBLAS are not bundled and come from the system).
# tools/bundle.sh copies the libraries on the right from the system. The unit tests name their fakes by file name
# (found through those RPATHs) and read tests/data relative to the working folder: run them from the bundle's root.

set(TGC_BUNDLE_LIBRARIES tg_tools tg_api tg_frontend tg_stdlib tg_grammar tg_autodiff tg_io tg_opt tg_runtime tg_codegen
    tg_ir)
set(TGC_BUNDLE_BINARIES tgc gpu tgc_unit_tests)
if(TGC_PYTHON) # tools/wheel.sh: the Python module, beside its libraries in the wheel (tgc/_tgc*.so, tgc/lib/)
  list(APPEND TGC_BUNDLE_BINARIES tgc_python)
endif()

# The static LLVM components, in place of the shared libLLVM, wherever tgc's libraries link LLVM.
llvm_map_components_to_libnames(TGC_LLVM_LIBRARIES ${TGC_LLVM_COMPONENTS})
add_library(tgc_llvm_static INTERFACE)
target_link_libraries(tgc_llvm_static INTERFACE ${TGC_LLVM_LIBRARIES})
foreach(library ${TGC_BUNDLE_LIBRARIES})
  set_property(TARGET ${library} PROPERTY POSITION_INDEPENDENT_CODE ON)
  foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(links ${library} ${property})
    if(links)
      list(TRANSFORM links REPLACE "^LLVM$" "tgc_llvm_static")
      list(TRANSFORM links REPLACE "^\\$<LINK_ONLY:LLVM>$" "$<LINK_ONLY:tgc_llvm_static>")
      set_property(TARGET ${library} PROPERTY ${property} "${links}")
    endif()
  endforeach()
endforeach()

# lib/libtgc.so: every object of tgc's libraries (--whole-archive), the LLVM objects they reach, and the shared
# libraries they link. The archives are named again without --whole-archive so that their own dependencies follow.
# BundleGlibc.cpp stands in for the one glibc function newer than 2.34 that LLVM calls.
add_library(tgc_library SHARED ${CMAKE_SOURCE_DIR}/tools/BundleGlibc.cpp)
set(archives)
foreach(library ${TGC_BUNDLE_LIBRARIES})
  list(APPEND archives $<TARGET_FILE:${library}>)
endforeach()
target_link_libraries(tgc_library PRIVATE -Wl,--whole-archive ${archives} -Wl,--no-whole-archive
                      ${TGC_BUNDLE_LIBRARIES})
# Only tgc's own symbols are exported: LLVM's stay inside, and the linker drops the sections nothing reaches.
# --as-needed: LLVMSupport names libz3, which no object tgc uses calls. -z defs: a component missing from
# TGC_LLVM_COMPONENTS is a link error here, not a failure at load time.
# A class's vtable and type info (_ZTV, _ZTI, _ZTS) go with it: the unit tests construct tgc's classes.
file(WRITE ${CMAKE_BINARY_DIR}/tgc_library.map
     "{ global: extern \"C++\" { tg::*; }; _ZTVN2tg*; _ZTIN2tg*; _ZTSN2tg*; local: *; };\n")
set_property(TARGET tgc_library APPEND PROPERTY LINK_DEPENDS ${CMAKE_BINARY_DIR}/tgc_library.map)
target_link_options(tgc_library PRIVATE -Wl,--version-script=${CMAKE_BINARY_DIR}/tgc_library.map
                    -Wl,--gc-sections -Wl,--as-needed -Wl,-z,defs -Wl,--disable-new-dtags)
# Usage requirements of the archives (the generated parser's include folders) pass to the binaries that link it.
foreach(library ${TGC_BUNDLE_LIBRARIES})
  target_include_directories(tgc_library INTERFACE $<TARGET_PROPERTY:${library},INTERFACE_INCLUDE_DIRECTORIES>)
endforeach()
set_target_properties(tgc_library PROPERTIES OUTPUT_NAME tgc LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                                             BUILD_RPATH "\$ORIGIN" INSTALL_RPATH "\$ORIGIN")

# The binaries link lib/libtgc.so in place of the archives.
foreach(binary ${TGC_BUNDLE_BINARIES})
  get_target_property(links ${binary} LINK_LIBRARIES)
  list(FILTER links EXCLUDE REGEX "^tg_")
  set_property(TARGET ${binary} PROPERTY LINK_LIBRARIES "${links};tgc_library")
  target_link_options(${binary} PRIVATE -Wl,--disable-new-dtags)
  set_target_properties(${binary} PROPERTIES BUILD_RPATH ${CMAKE_BINARY_DIR}/lib INSTALL_RPATH "\$ORIGIN/../lib")
endforeach()
if(TGC_PYTHON)
  set_target_properties(tgc_python PROPERTIES INSTALL_RPATH "\$ORIGIN/lib")
endif()

# The fake CUDA driver and cuBLAS beside libtgc.so; the unit tests open them by file name.
set_target_properties(tgc_fake_cuda tgc_fake_cublas PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                                                               INSTALL_RPATH "\$ORIGIN")
get_target_property(definitions tgc_unit_tests COMPILE_DEFINITIONS)
list(TRANSFORM definitions REPLACE "^TGC_FAKE_CUDA=.*" "TGC_FAKE_CUDA=\"$<TARGET_FILE_NAME:tgc_fake_cuda>\"")
list(TRANSFORM definitions REPLACE "^TGC_FAKE_CUBLAS=.*" "TGC_FAKE_CUBLAS=\"$<TARGET_FILE_NAME:tgc_fake_cublas>\"")
list(TRANSFORM definitions REPLACE "^TGC_SOURCE_DIR=.*" "TGC_SOURCE_DIR=\".\"")
set_property(TARGET tgc_unit_tests PROPERTY COMPILE_DEFINITIONS "${definitions}")

# `cmake --install build-bundle --prefix STAGE --strip` lays the bundle's binaries out; tools/bundle.sh adds the
# system's libraries, the tests, the examples and the standard library.
install(TARGETS tgc RUNTIME DESTINATION bin)
install(TARGETS gpu RUNTIME DESTINATION bench)
install(TARGETS tgc_unit_tests RUNTIME DESTINATION tests)
install(TARGETS tgc_library tgc_fake_cuda tgc_fake_cublas LIBRARY DESTINATION lib)
install(FILES ${CMAKE_BINARY_DIR}/lib/libtgc_aot_runtime.a DESTINATION lib) # for tgc compile --emit=lib
# What tools/wheel.sh takes (cmake --install BUILD --component wheel): the command, the library, the module.
if(TGC_PYTHON)
  install(TARGETS tgc RUNTIME DESTINATION bin COMPONENT wheel EXCLUDE_FROM_ALL)
  install(TARGETS tgc_library LIBRARY DESTINATION lib COMPONENT wheel EXCLUDE_FROM_ALL)
  install(TARGETS tgc_python LIBRARY DESTINATION python/tgc COMPONENT wheel EXCLUDE_FROM_ALL)
endif()
