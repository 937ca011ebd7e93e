// tgc/tgc.h: tgc as a C++ library, installed by `cmake --install` (tools/Install.cmake) and found with
// find_package(tgc): compile a script, run it, step it, read and write its params (api/Api.h); make a library
// ahead of time (api/Library.h); read and write .npy files (io/Npy.h); print arrays as tgc run does
// (runtime/Print.h). examples/embed/ uses it.
#pragma once

#include "api/Api.h"
#include "api/Library.h"
#include "io/Npy.h"
#include "runtime/Print.h"
