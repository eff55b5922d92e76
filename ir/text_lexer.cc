#include "ir/text_lexer.h"

#include <cctype>
#include <cstdio>

namespace weft {
namespace {

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string char_repr(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "'\\x%02x'", static_cast<unsigned char>(c));
  return buf;
}

}  // namespace

bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::Eof: return "end of file";
    case TokenKind::Error: return "malformed input";
    case TokenKind::ValueName: return "'%" + token.text + "'";
    case TokenKind::GraphName: return "'@" + token.text + "'";
    case TokenKind::BlockLabel: return "'^" + token.text + "'";
    case TokenKind::String: return "a string";
    case TokenKind::Ident:
    case TokenKind::Number: return "'" + token.text + "'";
    case TokenKind::LParen: return "'('";
    case TokenKind::RParen: return "')'";
    case TokenKind::LBrace: return "'{'";
    case TokenKind::RBrace: return "'}'";
    case TokenKind::LBracket: return "'['";
    case TokenKind::RBracket: return "']'";
    case TokenKind::Comma: return "','";
    case TokenKind::Colon: return "':'";
    case TokenKind::Equals: return "'='";
    case TokenKind::Arrow: return "'->'";
  }
  return "?";
}

char Lexer::peek(size_t ahead) const {
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

void Lexer::advance() {
  if (pos_ >= text_.size()) return;
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = peek();
    if (c == '#') {
      while (pos_ < text_.size() && peek() != '\n') advance();
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skip_space_and_comments();
  Token token;
  token.line = line_;
  token.col = col_;
  if (pos_ >= text_.size()) return token;  // Eof
  char c = peek();
  auto single = [&](TokenKind kind) {
    advance();
    token.kind = kind;
    return token;
  };
  switch (c) {
    case '(': return single(TokenKind::LParen);
    case ')': return single(TokenKind::RParen);
    case '{': return single(TokenKind::LBrace);
    case '}': return single(TokenKind::RBrace);
    case '[': return single(TokenKind::LBracket);
    case ']': return single(TokenKind::RBracket);
    case ',': return single(TokenKind::Comma);
    case ':': return single(TokenKind::Colon);
    case '=': return single(TokenKind::Equals);
    case '"': return lex_string(std::move(token));
    case '%':
      advance();
      return lex_name(TokenKind::ValueName, std::move(token));
    case '@':
      advance();
      return lex_name(TokenKind::GraphName, std::move(token));
    case '^':
      advance();
      return lex_name(TokenKind::BlockLabel, std::move(token));
    default: break;
  }
  if (c == '-' && peek(1) == '>') {
    advance();
    return single(TokenKind::Arrow);
  }
  if (is_digit(c) || ((c == '-' || c == '+') && (is_name_char(peek(1))))) {
    return lex_number(std::move(token));
  }
  if (is_alpha(c)) {
    while (is_name_char(peek())) {
      token.text += peek();
      advance();
    }
    token.kind = TokenKind::Ident;
    return token;
  }
  token.kind = TokenKind::Error;
  token.text = "unexpected character " + char_repr(c);
  return token;
}

// `%name`, `@name`, or the quoted forms `%"any name"` for names with other characters.
Token Lexer::lex_name(TokenKind kind, Token token) {
  char sigil = kind == TokenKind::ValueName ? '%' : kind == TokenKind::GraphName ? '@' : '^';
  if (peek() == '"') {
    Token quoted = lex_string(token);
    if (quoted.kind == TokenKind::Error) return quoted;
    token.text = std::move(quoted.text);
  } else {
    while (is_name_char(peek())) {
      token.text += peek();
      advance();
    }
  }
  if (token.text.empty()) {
    token.kind = TokenKind::Error;
    token.text = std::string("expected a name after '") + sigil + "'";
    return token;
  }
  token.kind = kind;
  return token;
}

// The longest run of name characters (plus an exponent's sign) after an optional sign;
// the parser checks that it is a well-formed number, so `12abc` is one malformed token.
Token Lexer::lex_number(Token token) {
  token.kind = TokenKind::Number;
  token.text += peek();
  advance();
  while (true) {
    char c = peek();
    bool exponent_sign = (c == '-' || c == '+') && (token.text.back() == 'e' ||
                                                     token.text.back() == 'E');
    if (!is_name_char(c) && !exponent_sign) break;
    token.text += c;
    advance();
  }
  return token;
}

Token Lexer::lex_string(Token token) {
  advance();  // opening quote
  std::string contents;
  while (true) {
    char c = peek();
    if (pos_ >= text_.size() || c == '\n') {
      token.kind = TokenKind::Error;
      token.text = "unterminated string; add the closing '\"' (a string may not span lines; "
                   "write a newline as \\n)";
      return token;
    }
    advance();
    if (c == '"') break;
    if (c == '\\') {
      char e = peek();
      if (pos_ >= text_.size() || e == '\n') continue;  // reported as unterminated
      if (e == '"' || e == '\\') {
        contents += e;
      } else if (e == 'n') {
        contents += '\n';
      } else {
        Token bad;
        bad.kind = TokenKind::Error;
        bad.line = line_;
        bad.col = col_ - 1;
        bad.text = "unknown escape sequence '\\" + std::string(1, e) +
                   "' in string; use \\\", \\\\ or \\n";
        return bad;
      }
      advance();
      continue;
    }
    contents += c;
  }
  token.kind = TokenKind::String;
  token.text = std::move(contents);
  return token;
}

}  // namespace weft
