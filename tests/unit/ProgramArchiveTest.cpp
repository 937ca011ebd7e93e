// The program archive (ir/ProgramArchive.h): every example script, optimized for the CPU and placed for a
// device, reads back as the same program (the same printed graphs, and the same archive when written again);
// damaged archives are errors, never crashes.
#include "ir/ProgramArchive.h"

#include "frontend/Diagnostics.h"
#include "frontend/GraphBuilder.h"
#include "ir/Printers.h"
#include "opt/Pipeline.h"
#include "runtime/ConstantEvaluator.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <sstream>

namespace tg {
namespace {

std::unique_ptr<ir::Program> compileExample(const std::string &name, bool device) {
  std::ostringstream errors;
  frontend::DiagnosticEngine diags(errors);
  std::unique_ptr<ir::Program> program =
      frontend::compileScript(std::string(TGC_SOURCE_DIR) + "/examples/" + name, diags);
  EXPECT_TRUE(program) << errors.str();
  if (!program) return nullptr;
  opt::OptimizerOptions options;
  options.evaluate = runtime::evaluateConstant;
  options.device = device;
  opt::optimize(*program, options);
  return program;
}

class ProgramArchiveTest : public testing::TestWithParam<std::string> {};

TEST_P(ProgramArchiveTest, ReadsBackTheSameProgram) {
  for (bool device : {false, true}) {
    std::unique_ptr<ir::Program> program = compileExample(GetParam(), device);
    ASSERT_TRUE(program);
    std::string archive = ir::writeProgram(*program);
    std::unique_ptr<ir::Program> read = ir::readProgram(archive);
    EXPECT_EQ(ir::printIr(*read), ir::printIr(*program)) << "device " << device;
    EXPECT_TRUE(read->graph.verify().empty());
    EXPECT_EQ(read->graph.toposort().size(), program->graph.toposort().size());
    std::string again = ir::writeProgram(*read);
    auto differ = std::mismatch(again.begin(), again.end(), archive.begin(), archive.end());
    EXPECT_TRUE(again == archive) << "device " << device << ": written again, the archive differs from byte "
                                  << differ.first - again.begin() << " of " << archive.size();
    ASSERT_EQ(read->params.size(), program->params.size());
    for (size_t i = 0; i < read->params.size(); ++i) {
      EXPECT_EQ(read->params[i].name, program->params[i].name);
      EXPECT_EQ(read->params[i].loc.str(), program->params[i].loc.str());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ProgramArchiveTest,
                         testing::Values("mlp.tg", "logreg.tg", "cnn.tg", "char_rnn.tg", "embedding.tg",
                                         "softmax.tg", "normalize.tg", "matrix.tg"),
                         [](const testing::TestParamInfo<std::string> &info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

TEST(ProgramArchiveErrorTest, DamagedArchivesAreErrors) {
  std::unique_ptr<ir::Program> program = compileExample("mlp.tg", false);
  ASSERT_TRUE(program);
  std::string archive = ir::writeProgram(*program);
  EXPECT_THROW(ir::readProgram("not an archive"), ir::UserError);
  std::string otherVersion = archive;
  otherVersion[8] ^= 1; // the format version
  EXPECT_THROW(ir::readProgram(otherVersion), ir::UserError);
  // Cut short anywhere, or followed by more bytes: an error saying so.
  for (size_t size = 8; size < archive.size(); size += std::max<size_t>(1, archive.size() / 97))
    EXPECT_THROW(ir::readProgram(std::string_view(archive).substr(0, size)), ir::UserError) << size;
  EXPECT_THROW(ir::readProgram(archive + "x"), ir::UserError);
}

} // namespace
} // namespace tg
