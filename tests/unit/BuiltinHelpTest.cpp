// tgc help TOPIC: every builtin has its signature (the one calls are checked against) and a line of doc; the
// standard library's functions have their def's parameters and the comment above it.
#include "frontend/GraphBuilder.h"
#include "ir/Op.h"

#include <gtest/gtest.h>

namespace tg::frontend {
namespace {

TEST(BuiltinHelpTest, EveryBuiltinOpHasASignatureAndADoc) {
  for (ir::OpKind kind : {
#define OP(Enum, ...) ir::OpKind::Enum,
#include "ir/Ops.def"
       }) {
    const ir::OpInfo &info = ir::opInfo(kind);
    if (!*info.builtin) continue;
    std::optional<std::string> help = builtinHelp(info.name);
    ASSERT_TRUE(help) << info.name;
    std::string signature = help->substr(0, help->find('\n'));
    EXPECT_EQ(signature.rfind(std::string(info.name) + "(", 0), 0u) << *help;
    std::string doc = help->substr(help->find('\n') + 1);
    EXPECT_GT(doc.size(), 4u) << info.name << " has no doc line";
  }
}

TEST(BuiltinHelpTest, FunctionsCastsAndTheStandardLibrary) {
  EXPECT_EQ(builtinHelp("sum").value().substr(0, builtinHelp("sum")->find('\n')),
            "sum(x, axis=..., keepdims=...)");
  EXPECT_EQ(builtinHelp("conv2d").value().substr(0, builtinHelp("conv2d")->find('\n')),
            "conv2d(x, w, stride=..., padding=..., dilation=..., groups=...)");
  EXPECT_NE(builtinHelp("f32").value().find("astype(float32)"), std::string::npos);
  std::string softmax = builtinHelp("nn.softmax").value();
  EXPECT_EQ(softmax.substr(0, softmax.find('\n')), "nn.softmax(x, axis)");
  EXPECT_NE(softmax.find("shifted by the maximum"), std::string::npos) << softmax;
  EXPECT_EQ(builtinHelp("softmax"), builtinHelp("nn.softmax"));
  EXPECT_FALSE(builtinHelp("conv3d"));
  EXPECT_FALSE(builtinHelp("nn.nothing"));
  std::vector<std::string> topics = helpTopics();
  for (const std::string &topic : topics)
    EXPECT_TRUE(builtinHelp(topic)) << topic;
}

} // namespace
} // namespace tg::frontend
