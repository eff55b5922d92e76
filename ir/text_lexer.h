#pragma once
// The tokenizer of the `.wir` text format (ir/text.h describes the grammar). Internal to
// the parser; kept apart so the parser reads as grammar rules.

#include <string>
#include <string_view>

namespace weft {

enum class TokenKind {
  Eof,
  Error,      ///< A malformed token; `text` is the message (e.g. unterminated string).
  Ident,      ///< `graph`, `matmul`, `f32`, `true`, `inf`, `loc`, attribute names.
  ValueName,  ///< `%h`; `text` holds the name without `%`.
  GraphName,  ///< `@mlp`; `text` holds the name without `@`.
  BlockLabel, ///< `^body`; `text` holds the label without `^`.
  Number,     ///< `12`, `-3`, `1e-05`, `2.0`, `-inf`; `text` is the literal as written.
  String,     ///< `"..."`; `text` holds the decoded contents.
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Colon, Equals,
  Arrow,      ///< `->`
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string text;
  int line = 1;  ///< 1-based line of the token's first character.
  int col = 1;   ///< 1-based column (in bytes) of the token's first character.
};

/// How a token is named in error messages: `'matmul'`, `'%h'`, `end of file`.
std::string describe(const Token& token);

/// Whether `c` may appear in an unquoted name (`%w1_new`, `@mlp.v2`, `matmul`).
bool is_name_char(char c);

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  /// The next token; `Eof` forever once the input is used up.
  Token next();

 private:
  char peek(size_t ahead = 0) const;
  void advance();
  void skip_space_and_comments();
  Token lex_name(TokenKind kind, Token token);
  Token lex_number(Token token);
  Token lex_string(Token token);

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace weft
