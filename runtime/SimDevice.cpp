// The simulated device (Device.h): host memory kept apart by copying at every transfer, and the CPU runtime
// for its nodes (which runs device fused nodes through the simulated grid).
#include "runtime/Device.h"
#include "runtime/Kernels.h"

namespace tg::runtime {

namespace {

class SimDevice : public Device {
public:
  std::string describe() const override { return "sim"; }

  Tensor upload(const Tensor &host) override { return copy(host); }
  Tensor download(const Tensor &device) override { return copy(device); }

  Tensor run(const ir::Node &node, const std::vector<Tensor> &arguments) override {
    return runOp(node.op(), arguments, {node.output()->type()}).at(0);
  }

private:
  static Tensor copy(const Tensor &source) {
    Tensor copy = Tensor::empty(source.dtype(), source.shape());
    copy.copyFrom(source);
    return copy;
  }
};

} // namespace

std::unique_ptr<Device> makeSimDevice() {
  return std::make_unique<SimDevice>();
}

} // namespace tg::runtime
