// How ANTLR's parser of grammar/Tg.g4 reports syntax errors (frontend/Parser.cpp installs both for a line
// that does not parse): short messages that name the offending token ("expected ':', found 'f32'",
// "unexpected ')'", "missing ')' before end of line") in place of ANTLR's "extraneous input 'x' expecting
// {...}" with whole token sets, one per line, recovery resuming at the end of the line at the latest.
#pragma once

#include "antlr4-runtime.h"
#include "frontend/Diagnostics.h"

#include <memory>
#include <string>

namespace tg::frontend {

/// ANTLR's error recovery with readable messages, which it sends to the parser's error listeners.
class ReadableErrorStrategy : public antlr4::DefaultErrorStrategy {
protected:
  void reportNoViableAlternative(antlr4::Parser *parser, const antlr4::NoViableAltException &e) override;
  void reportInputMismatch(antlr4::Parser *parser, const antlr4::InputMismatchException &e) override;
  void reportMissingToken(antlr4::Parser *parser) override;
  void reportUnwantedToken(antlr4::Parser *parser) override;
  antlr4::misc::IntervalSet getErrorRecoverySet(antlr4::Parser *parser) override;
};

/// Sends the lexer's and the parser's errors to the diagnostics, with 1-based columns. Only the first error
/// of a line is reported: the others on it are mostly echoes of the first, left by ANTLR's recovery.
class DiagnosticListener : public antlr4::BaseErrorListener {
public:
  DiagnosticListener(std::shared_ptr<const std::string> file, DiagnosticEngine &diags)
      : file_(std::move(file)), diags_(diags) {}

  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t line, size_t column,
                   const std::string &message, std::exception_ptr) override;
  /// How many syntax errors were found, reported or not.
  size_t errors() const { return errors_; }

private:
  std::shared_ptr<const std::string> file_;
  DiagnosticEngine &diags_;
  size_t lastErrorLine_ = 0;
  size_t errors_ = 0;
};

} // namespace tg::frontend
