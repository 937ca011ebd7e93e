# tgcConfig.cmake: find_package(tgc) for a prefix that `cmake --install` made (tools/Install.cmake). Gives the
# imported target tgc::tgc (libtgc.so, with its headers: #include <tgc/tgc.h>, C++20) and TGC_EXECUTABLE (the
# tgc command, for tgc compile --emit=lib at build time).
get_filename_component(_tgc_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET tgc::tgc)
  add_library(tgc::tgc SHARED IMPORTED)
  set_target_properties(tgc::tgc PROPERTIES
    IMPORTED_LOCATION "${_tgc_prefix}/lib/libtgc.so"
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${_tgc_prefix}/include;${_tgc_prefix}/include/tgc"
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()
set(TGC_EXECUTABLE "${_tgc_prefix}/bin/tgc")
unset(_tgc_prefix)
