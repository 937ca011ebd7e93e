#include "frontend/Lexer.h"

#include "TgLexer.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <vector>

namespace tg::frontend {
namespace {

using grammar::TgLexer;

bool isDigit(char32_t c) {
  return c >= U'0' && c <= U'9';
}
bool isNameStart(char32_t c) {
  return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z') || c == U'_';
}
bool isNamePart(char32_t c) {
  return isNameStart(c) || isDigit(c);
}
bool isSpace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\r' || c == U'\f';
}

/// The token types of the grammar's literal tokens ('**', '=', 'let', ...), from the generated vocabulary,
/// so that the literals are stated in Tg.g4 alone.
struct Literals {
  std::vector<std::pair<std::u32string, size_t>> words; // keywords
  std::array<size_t, 128> single{};                     // one-character symbols by character, 0 for none
  std::vector<std::pair<std::string, size_t>> pairs;    // two-character symbols
  std::unordered_map<std::string, size_t> all;          // every literal by its text

  Literals() {
    antlr4::ANTLRInputStream empty;
    const antlr4::dfa::Vocabulary &vocabulary = TgLexer(&empty).getVocabulary(); // static data
    for (size_t type = 1; type <= vocabulary.getMaxTokenType(); ++type) {
      std::string quoted = vocabulary.getLiteralName(type); // "'**'", or "" for a token of no one text
      if (quoted.size() < 3) continue;
      std::string text = quoted.substr(1, quoted.size() - 2);
      all.emplace(text, type);
      if (isNameStart(static_cast<unsigned char>(text[0])))
        words.emplace_back(std::u32string(text.begin(), text.end()), type);
      else if (text.size() == 1)
        single[static_cast<unsigned char>(text[0])] = type;
      else
        pairs.emplace_back(text, type);
    }
  }
};

const Literals &literals() {
  static const Literals table;
  return table;
}

/// The type of the keyword `word` is, or NAME.
size_t wordType(std::u32string_view word) {
  for (const auto &[keyword, type] : literals().words)
    if (keyword == word) return type;
  return TgLexer::NAME;
}

} // namespace

size_t literalType(std::string_view text) {
  auto found = literals().all.find(std::string(text));
  return found == literals().all.end() ? 0 : found->second;
}

Token Lexer::next() {
  Token token;
  for (;;) {
    if (!match(token)) continue;
    // A line without tokens (blank, or only a comment) ends with no NEWLINE token either.
    if (atLineStart_ && token.type == TgLexer::NEWLINE) continue;
    atLineStart_ = token.type == TgLexer::NEWLINE;
    return token;
  }
}

void Lexer::advanceTo(size_t end) {
  for (; index_ < end; ++index_) {
    if (text_[index_] == U'\n') {
      ++line_;
      column_ = 0;
    } else {
      ++column_;
    }
  }
}

bool Lexer::match(Token &made) {
  size_t start = index_, line = line_, column = column_, size = text_.size();
  auto token = [&](size_t type, size_t end) {
    advanceTo(end);
    made = {type, start, end, line, column};
    return true;
  };
  if (start == size) return token(antlr4::Token::EOF, start); // ANTLR's EOF: stop = start - 1
  char32_t c = text_[start];
  size_t end = start + 1;
  if (c == U'\n' || (c == U'\r' && at(end) == U'\n')) { // NEWLINE
    end += c == U'\r';
    if (bracketDepth_ > 0 && !lineStartsStatement(end)) {
      advanceTo(end);
      return false;
    }
    bracketDepth_ = 0;
    return token(TgLexer::NEWLINE, end);
  }
  if (isSpace(c)) { // SPACE, skipped
    while (end < size && isSpace(text_[end]))
      ++end;
    advanceTo(end);
    return false;
  }
  if (c == U'#') { // COMMENT, skipped
    while (end < size && text_[end] != U'\r' && text_[end] != U'\n')
      ++end;
    advanceTo(end);
    return false;
  }
  // EXPONENT: [eE] [+-]? DIGIT+, its end from `at`, or `at` itself when there is none.
  auto exponent = [&](size_t at) {
    if (this->at(at) != U'e' && this->at(at) != U'E') return at;
    size_t digits = at + 1 + (this->at(at + 1) == U'+' || this->at(at + 1) == U'-');
    if (!isDigit(this->at(digits))) return at;
    while (isDigit(this->at(digits)))
      ++digits;
    return digits;
  };
  if (isDigit(c) || (c == U'.' && isDigit(at(end)))) { // INT, FLOAT
    while (isDigit(at(end)))
      ++end;
    bool isFloat = c == U'.';
    if (!isFloat && at(end) == U'.') {
      isFloat = true;
      for (++end; isDigit(at(end));)
        ++end;
    }
    size_t withExponent = exponent(end);
    isFloat = isFloat || withExponent > end;
    return token(isFloat ? TgLexer::FLOAT : TgLexer::INT, withExponent);
  }
  if (isNameStart(c)) { // NAME, or a keyword
    while (isNamePart(at(end)))
      ++end;
    return token(wordType(text_.substr(start, end - start)), end);
  }
  if (c == U'"') { // STRING, or UNTERMINATED_STRING where the line or the text ends first
    for (;;) {
      if (end == size || text_[end] == U'\r' || text_[end] == U'\n')
        return token(TgLexer::UNTERMINATED_STRING, end);
      if (text_[end] == U'"') return token(TgLexer::STRING, end + 1);
      if (text_[end] == U'\\') {
        if (end + 1 == size || text_[end + 1] == U'\r' || text_[end + 1] == U'\n')
          return token(TgLexer::UNTERMINATED_STRING, end);
        ++end;
      }
      ++end;
    }
  }
  if (c < 128) {
    for (const auto &[text, type] : literals().pairs)
      if (static_cast<char32_t>(text[0]) == c && at(end) == static_cast<char32_t>(text[1]))
        return token(type, end + 1);
    if (size_t type = literals().single[c]) {
      if (type == TgLexer::LPAREN || type == TgLexer::LBRACK) ++bracketDepth_;
      if ((type == TgLexer::RPAREN || type == TgLexer::RBRACK) && bracketDepth_ > 0) --bracketDepth_;
      return token(type, end);
    }
  }
  return token(TgLexer::ERROR_CHAR, end);
}

bool Lexer::lineStartsStatement(size_t index) const {
  for (;; ++index) { // past blanks, line breaks and comments
    char32_t c = at(index);
    if (index < text_.size() && c == U'#') {
      while (index + 1 < text_.size() && text_[index + 1] != U'\n')
        ++index;
    } else if (index >= text_.size() || (c != U' ' && c != U'\t' && c != U'\r' && c != U'\n')) {
      break;
    }
  }
  size_t end = index;
  while (end < text_.size() && isNamePart(text_[end]))
    ++end;
  if (end == text_.size()) return true;
  size_t type = wordType(text_.substr(index, end - index));
  static const std::array<size_t, 8> kStatementKeywords = {TgLexer::IMPORT, TgLexer::DEF,   TgLexer::INPUT,
                                                           TgLexer::PARAM,  TgLexer::LET,   TgLexer::OUTPUT,
                                                           TgLexer::UPDATE, TgLexer::RETURN};
  return std::find(kStatementKeywords.begin(), kStatementKeywords.end(), type) != kStatementKeywords.end();
}

std::unique_ptr<antlr4::Token> AntlrTokenSource::nextToken() {
  Token token = lexer_.next();
  auto made = std::make_unique<antlr4::CommonToken>(
      std::make_pair(this, &input_), token.type, antlr4::Token::DEFAULT_CHANNEL, token.start, token.end - 1);
  made->setLine(token.line);
  made->setCharPositionInLine(token.column);
  return made;
}

antlr4::TokenFactory<antlr4::CommonToken> *AntlrTokenSource::getTokenFactory() {
  return antlr4::CommonTokenFactory::DEFAULT.get();
}

} // namespace tg::frontend
