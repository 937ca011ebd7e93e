// The CUDA device (runtime/Device.h) on the driver API: the primary context of one GPU, one stream for all
// work, a caching allocator, PTX modules compiled by codegen and loaded once per kernel, and cuBLAS for
// matmul when it is installed.
//
//   fused node, elementwise op     the generated kernel (an unfused elementwise op is a one-op program)
//   fused or plain reduction       the generated reduction kernel (warp shuffles, one block per output)
//   argmax, argmin                 two generated reductions (runtime/ArgReduction.h)
//   concat, stack                  device-to-device copies of the parts, the joined axis moved first
//   matmul                         per batch matrix, cuBLAS gemm (f32, f64, row-major or transposed
//                                  operands), or without cuBLAS the generated matmul kernel (Kernel.h)
//   transpose, broadcast_to,       views of device memory (reshape of a non-contiguous value copies it
//   slice, reshape                 with a generated kernel first)
//
// (runtime/DevicePlan.h decides it for both devices.) Kernel errors (integer pow with a negative exponent) are read back after the kernels that can raise them.
#pragma once

#include "runtime/Device.h"

#include <memory>

namespace tg::runtime::cuda {

/// Opens GPU `ordinal` through the driver (Driver::defaultLibrary()). Throws ir::UserError saying what is
/// missing (no driver, no GPU, a driver too old) or which call failed.
std::unique_ptr<Device> openCudaDevice(int ordinal = 0);

} // namespace tg::runtime::cuda
