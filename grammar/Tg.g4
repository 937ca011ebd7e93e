// The grammar of .tg scripts, the one statement of the language's syntax (docs/language.md describes it). ANTLR
// generates the lexer, the parser and a visitor from it at build time (grammar/CMakeLists.txt); they parse every
// script (frontend/Parser.cpp), and frontend/AstBuilder.cpp turns each line's parse tree into the AST.
grammar Tg;

@lexer::members {
  // Newlines inside () and [] continue the line, so that long calls and lists can span lines. A newline
  // before a statement keyword (or the end of the file), blank and comment lines aside, still ends the
  // statement, so that an unclosed bracket is reported on its own line instead of swallowing the file.
  int bracketDepth = 0;

  bool nextLineStartsStatement() {
    ssize_t i = 1;
    for (size_t c = _input->LA(i);; c = _input->LA(++i)) { // skip blanks, line breaks and comments
      if (c == '#') {
        while (_input->LA(i + 1) != '\n' && _input->LA(i + 1) != antlr4::IntStream::EOF)
          ++i;
      } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
        break;
      }
    }
    if (_input->LA(i) == antlr4::IntStream::EOF) return true;
    std::string word = "'";
    for (size_t c = _input->LA(i); c < 128 && (isalnum(static_cast<int>(c)) || c == '_'); c = _input->LA(++i))
      word += static_cast<char>(c);
    word += "'";
    // The statement keywords are the tokens IMPORT to RETURN, spelled as the rules below spell them.
    for (size_t type = IMPORT; type <= RETURN; ++type)
      if (getVocabulary().getLiteralName(type) == word) return true;
    return false;
  }

  // A line without tokens (blank, or only a comment) ends with no NEWLINE token either: a long run of comments
  // costs no tokens and no parse tree.
  bool atLineStart = true;

  std::unique_ptr<antlr4::Token> nextToken() override {
    std::unique_ptr<antlr4::Token> token = antlr4::Lexer::nextToken();
    while (atLineStart && token->getType() == NEWLINE)
      token = antlr4::Lexer::nextToken();
    atLineStart = token->getType() == NEWLINE;
    return token;
  }
}

// One line of a script: scripts are parsed line by line, so that after a syntax error ANTLR's recovery resumes
// at the next line instead of abandoning the rest of the file.
line : statement? (NEWLINE | EOF) ;

statement : importStmt | defStmt | inputStmt | paramStmt | letStmt | outputStmt | updateStmt ;

importStmt : IMPORT NAME ;
defStmt    : DEF NAME LPAREN nameList? RPAREN ('=' results | defBlock) ;
// Statements on their own lines; the AST builder checks that the last one, and only it, is a return.
defBlock   : '{' NEWLINE (bodyStmt? NEWLINE)* '}' ;
bodyStmt   : letStmt | RETURN results ;
// A function's results: one expression, or several (`return h, c`) that `let h, c = f(...)` binds.
results    : expr (',' expr)* ;
inputStmt  : INPUT NAME ':' type ;
paramStmt  : PARAM NAME ':' type '=' expr ;
letStmt    : LET names=nameList '=' value=expr ;
// `output loss, exp(x) + 1`: a name keeps its name; another expression is named by its source text.
outputStmt : OUTPUT expr (',' expr)* ;
updateStmt : UPDATE NAME '=' expr ;

nameList : NAME (',' NAME)* ;

// `f32` or `f32[n, 4]`.
type : dtype=NAME (LBRACK dim (',' dim)* RBRACK)? ;
dim  : INT | NAME ;

// Labels (lhs=, rhs=, operand=, ...) name what the AST builder reads. Loosest last. Prefix alternatives bind
// their operand at their own level: `-x**2` is `-(x**2)`, while the
// exponent of `**` may itself start with a prefix operator (`2**-1`).
expr
  : operand=primary                                          # primaryExpr
  | expr LBRACK subscript (',' subscript)* RBRACK            # indexExpr
  | <assoc=right> lhs=expr op='**' rhs=expr                  # binaryExpr
  | op=('-' | '+') operand=expr                              # unaryExpr
  | '@' place=NAME expr                                      # pinnedExpr
  | lhs=expr op=('*' | '/' | '//' | '%' | '@') rhs=expr      # binaryExpr
  | lhs=expr op=('+' | '-') rhs=expr                         # binaryExpr
  | lhs=expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') rhs=expr # binaryExpr
  | op=NOT operand=expr                                      # unaryExpr
  | lhs=expr op=AND rhs=expr                                 # binaryExpr
  | lhs=expr op=OR rhs=expr                                  # binaryExpr
  ;

primary
  : callee=qualifiedName LPAREN (args+=argument (',' args+=argument)* ','?)? RPAREN   # callExpr
  | qualifiedName                                                  # nameExpr
  | INT                                                            # intExpr
  | FLOAT                                                          # floatExpr
  | value=(TRUE | FALSE)                                           # boolExpr
  | STRING                                                         # stringExpr
  | LBRACK (expr (',' expr)* ','?)? RBRACK                         # listExpr
  | LPAREN expr RPAREN                                             # parenExpr
  ;

// `name` or `module.name`.
qualifiedName : first=NAME ('.' member=NAME)? ;
argument      : (keyword=NAME '=')? value=expr ;
// `i`, a range `lower:upper:step` whose parts may each be left out, `None` (a new axis of size 1) or `...` (as
// many whole axes as the other subscripts leave).
subscript : expr slice? | slice | NONE | ELLIPSIS ;
slice     : ':' upper=expr? (':' step=expr?)? ;

// The statement keywords, IMPORT to RETURN in a row (nextLineStartsStatement() reads them as a range).
IMPORT : 'import' ;
DEF    : 'def' ;
INPUT  : 'input' ;
PARAM  : 'param' ;
LET    : 'let' ;
OUTPUT : 'output' ;
UPDATE : 'update' ;
RETURN : 'return' ;
NONE   : 'None' ;
TRUE   : 'true' ;
FALSE  : 'false' ;
AND    : 'and' ;
OR     : 'or' ;
NOT    : 'not' ;

LPAREN : '(' { ++bracketDepth; } ;
RPAREN : ')' { if (bracketDepth > 0) --bracketDepth; } ;
LBRACK : '[' { ++bracketDepth; } ;
RBRACK : ']' { if (bracketDepth > 0) --bracketDepth; } ;

ELLIPSIS : '...' ;

INT   : DIGIT+ ;
FLOAT : DIGIT+ '.' DIGIT* EXPONENT? | '.' DIGIT+ EXPONENT? | DIGIT+ EXPONENT ;
NAME  : [A-Za-z_] [A-Za-z0-9_]* ;
// `"x.npy"`, with the escapes \" \\ \n \t (resolved, and unknown ones reported, by the AST builder).
STRING : '"' STRING_CHAR* '"' ;
// A string the end of the line cuts off: reported by the parser as "unterminated string".
UNTERMINATED_STRING : '"' STRING_CHAR* ;

NEWLINE : '\r'? '\n' {
  if (bracketDepth > 0 && !nextLineStartsStatement())
    skip();
  else
    bracketDepth = 0;
} ;
SPACE   : [ \t\r\f]+ -> skip ;
COMMENT : '#' ~[\r\n]* -> skip ;
// Any other character: reported by the parser as "unexpected character", never dropped silently.
ERROR_CHAR : . ;

fragment DIGIT       : [0-9] ;
fragment STRING_CHAR : ~["\\\r\n] | '\\' ~[\r\n] ;
fragment EXPONENT    : [eE] [+-]? DIGIT+ ;
