// A Jinja subset for chat templates (include/nuvec/text/chat_template.h):
// the template is cut into text and tags with Jinja2's whitespace rules
// (trim_blocks, lstrip_blocks, "-"), parsed into a tree of statements and
// expressions, and evaluated over JSON values. Values follow Python's
// semantics where templates can tell (truthiness, str(), len() in code
// points, negative indexes, slices).
#include "nuvec/text/chat_template.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nuvec/error.h"
#include "text/utf8.h"

namespace nuvec::text {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void unsupported(std::string_view what, int line) {
  throw InvalidArgument(fmt::format("the chat template uses {} (line {}), which nuvec's Jinja subset does not support "
                                    "(docs/text.md lists what it does)",
                                    what, line));
}
[[noreturn]] void error(const std::string& what, int line) {
  throw InvalidArgument(fmt::format("the chat template fails at line {}: {}", line, what));
}

// ---- values -------------------------------------------------------------------

// A JSON value, Jinja's undefined, or a namespace() (shared, so `set ns.x` is seen by all).
struct Value {
  json j;
  bool undefined = false;
  std::shared_ptr<json> ns;

  Value(json v = json()) : j(std::move(v)) {}  // NOLINT: a JSON value is a value
  static Value undef() {
    Value v;
    v.undefined = true;
    return v;
  }
  static Value name_space(std::shared_ptr<json> object) {
    Value v;
    v.ns = std::move(object);
    return v;
  }
  const json& get() const { return ns ? *ns : j; }
};

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool truthy(const Value& v) {
  if (v.undefined) return false;
  const json& j = v.get();
  if (v.ns) return true;
  if (j.is_null()) return false;
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<std::int64_t>() != 0;
  if (j.is_number()) return j.get<double>() != 0;
  if (j.is_string()) return !j.get_ref<const std::string&>().empty();
  return !j.empty();
}

std::string py_float(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e16) return fmt::format("{:.1f}", d);
  return fmt::format("{}", d);
}

std::string py_repr(const json& j);
std::string py_str(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  return py_repr(j);
}
std::string py_repr(const json& j) {
  if (j.is_null()) return "None";
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number()) return py_float(j.get<double>());
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
      if (c == q || c == '\\') out += '\\';
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else out += c;
    }
    return out + q;
  }
  std::string out = j.is_array() ? "[" : "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "" : ", ";
    first = false;
    if (j.is_object()) out += py_repr(it.key()) + ": ";
    out += py_repr(*it);
  }
  return out + (j.is_array() ? "]" : "}");
}

std::string to_output(const Value& v) { return v.undefined ? "" : py_str(v.get()); }

// json.dumps(x, ensure_ascii=False) with Python's separators, as transformers' tojson.
std::string py_json(const json& j, int indent, int depth = 0) {
  if (!j.is_array() && !j.is_object()) {
    if (j.is_number_float()) return py_float(j.get<double>());
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (j.empty()) return j.is_array() ? "[]" : "{}";
  const std::string nl = indent > 0 ? "\n" + std::string(static_cast<std::size_t>(indent * (depth + 1)), ' ') : "";
  const std::string close = indent > 0 ? "\n" + std::string(static_cast<std::size_t>(indent * depth), ' ') : "";
  std::string out = j.is_array() ? "[" : "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? nl : (indent > 0 ? "," + nl : ", ");
    first = false;
    if (j.is_object()) out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
    out += py_json(*it, indent, depth + 1);
  }
  return out + close + (j.is_array() ? "]" : "}");
}

// ---- lexing expressions ------------------------------------------------------------

struct Token {
  enum Kind { name, string, integer, number, op, end } kind;
  std::string text;
};

std::vector<Token> lex(std::string_view s, int line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::name, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      bool real = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        real = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      out.push_back({real ? Token::number : Token::integer, std::string(s.substr(i, j - i))});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string text;
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          const char e = s[++j];
          switch (e) {
            case 'n': text += '\n'; break;
            case 't': text += '\t'; break;
            case 'r': text += '\r'; break;
            case '\\': text += '\\'; break;
            case '\'': text += '\''; break;
            case '"': text += '"'; break;
            default: text += '\\'; text += e;
          }
        } else {
          text += s[j];
        }
      }
      if (j >= s.size()) error("a string is not closed", line);
      out.push_back({Token::string, text});
      i = j + 1;
    } else {
      static const char* two[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op(1, c);
      for (const char* t : two) {
        if (s.substr(i, 2) == t) op = t;
      }
      if (std::string_view("+-*/%<>=()[]{}.,:|~!").find(c) == std::string_view::npos) {
        error(fmt::format("unexpected character '{}'", c), line);
      }
      out.push_back({Token::op, op});
      i += op.size();
    }
  }
  out.push_back({Token::end, ""});
  return out;
}

// ---- expressions -----------------------------------------------------------------------

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;
struct Expr {
  enum Kind { literal, name, list, dict, attr, item, slice, call, filter, test, unary, binary, conditional } kind;
  json value;           // literal
  std::string text;     // name, attribute, filter, test, operator
  std::vector<ExprPtr> args;  // operands, elements, call arguments (dict: key, value, key, value ...)
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // "is not"
  int line = 0;
};

ExprPtr node(Expr::Kind k, int line) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

  // A for loop's iterable: no conditional expression, since "if" there filters the loop.
  ExprPtr iterable() { return or_expr(); }
  ExprPtr expression() {
    ExprPtr e = or_expr();
    if (is_name("if")) {
      ++p_;
      ExprPtr cond = or_expr();
      ExprPtr other;
      if (is_name("else")) {
        ++p_;
        other = expression();
      }
      ExprPtr c = node(Expr::conditional, line_);
      c->args = {cond, e, other};
      return c;
    }
    return e;
  }
  bool is_name(std::string_view n) const { return t_[p_].kind == Token::name && t_[p_].text == n; }
  bool is_op(std::string_view o) const { return t_[p_].kind == Token::op && t_[p_].text == o; }
  void expect_op(std::string_view o) {
    if (!is_op(o)) error(fmt::format("expected '{}' but found '{}'", o, t_[p_].text), line_);
    ++p_;
  }
  std::string take_name() {
    if (t_[p_].kind != Token::name) error(fmt::format("expected a name but found '{}'", t_[p_].text), line_);
    return t_[p_++].text;
  }
  bool at_end() const { return t_[p_].kind == Token::end; }
  void expect_end() {
    if (!at_end()) error(fmt::format("unexpected '{}'", t_[p_].text), line_);
  }

 private:
  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b) {
    ExprPtr e = node(Expr::binary, line_);
    e->text = op;
    e->args = {std::move(a), std::move(b)};
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      ++p_;
      e = binary("or", e, and_expr());
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      ++p_;
      e = binary("and", e, not_expr());
    }
    return e;
  }
  ExprPtr not_expr() {
    if (is_name("not")) {
      ++p_;
      ExprPtr e = node(Expr::unary, line_);
      e->text = "not";
      e->args = {not_expr()};
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr e = add();
    for (;;) {
      if (t_[p_].kind == Token::op && (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">="))) {
        const std::string op = t_[p_++].text;
        e = binary(op, e, add());
      } else if (is_name("in")) {
        ++p_;
        e = binary("in", e, add());
      } else if (is_name("not") && t_[p_ + 1].kind == Token::name && t_[p_ + 1].text == "in") {
        p_ += 2;
        e = binary("not in", e, add());
      } else {
        return e;
      }
    }
  }
  ExprPtr add() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = t_[p_++].text;
      e = binary(op, e, concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = mul();
    while (is_op("~")) {
      ++p_;
      e = binary("~", e, mul());
    }
    return e;
  }
  ExprPtr mul() {
    ExprPtr e = unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = t_[p_++].text;
      e = binary(op, e, unary());
    }
    return e;
  }
  ExprPtr unary() {
    if (is_op("-")) {
      ++p_;
      ExprPtr e = node(Expr::unary, line_);
      e->text = "-";
      e->args = {unary()};
      return e;
    }
    if (is_op("**")) unsupported("the operator '**'", line_);
    return filters(postfix(primary()));
  }
  void call_args(ExprPtr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (t_[p_].kind == Token::name && t_[p_ + 1].kind == Token::op && t_[p_ + 1].text == "=") {
        std::string key = t_[p_].text;
        p_ += 2;
        e->kwargs.emplace_back(std::move(key), expression());
      } else {
        e->args.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
    ++p_;
  }
  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        ++p_;
        ExprPtr f = node(Expr::filter, line_);
        f->text = take_name();
        f->args.push_back(e);
        if (is_op("(")) call_args(f);
        e = f;
      } else if (is_name("is")) {
        ++p_;
        ExprPtr t = node(Expr::test, line_);
        if (is_name("not")) {
          ++p_;
          t->negated = true;
        }
        t->text = take_name();
        t->args.push_back(e);
        if (is_op("(")) call_args(t);
        e = t;
      } else {
        return e;
      }
    }
  }
  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        ++p_;
        ExprPtr a = node(Expr::attr, line_);
        a->text = take_name();
        a->args = {e};
        e = a;
      } else if (is_op("[")) {
        ++p_;
        ExprPtr parts[3];
        int colons = 0;
        while (!is_op("]")) {
          if (is_op(":")) {
            ++p_;
            if (++colons > 2) error("a slice with more than two ':'", line_);
          } else {
            parts[colons] = expression();
          }
        }
        ++p_;
        if (colons == 0) {
          ExprPtr i = node(Expr::item, line_);
          i->args = {e, parts[0]};
          e = i;
        } else {
          ExprPtr s = node(Expr::slice, line_);
          s->args = {e, parts[0], parts[1], parts[2]};
          e = s;
        }
      } else if (is_op("(")) {
        ExprPtr c = node(Expr::call, line_);
        c->args.push_back(e);
        call_args(c);
        e = c;
      } else {
        return e;
      }
    }
  }
  ExprPtr primary() {
    const Token tok = t_[p_++];
    if (tok.kind == Token::string) {
      ExprPtr e = node(Expr::literal, line_);
      e->value = tok.text;
      while (t_[p_].kind == Token::string) e->value = e->value.get<std::string>() + t_[p_++].text;  // "a" "b"
      return e;
    }
    if (tok.kind == Token::integer || tok.kind == Token::number) {
      ExprPtr e = node(Expr::literal, line_);
      if (tok.kind == Token::integer) e->value = std::stoll(tok.text);
      else e->value = std::stod(tok.text);
      return e;
    }
    if (tok.kind == Token::name) {
      ExprPtr e = node(Expr::literal, line_);
      if (tok.text == "true" || tok.text == "True") e->value = true;
      else if (tok.text == "false" || tok.text == "False") e->value = false;
      else if (tok.text == "none" || tok.text == "None") e->value = nullptr;
      else {
        e->kind = Expr::name;
        e->text = tok.text;
      }
      return e;
    }
    if (tok.kind == Token::op && tok.text == "(") {
      ExprPtr e = expression();
      if (is_op(",")) unsupported("a tuple", line_);
      expect_op(")");
      return e;
    }
    if (tok.kind == Token::op && tok.text == "[") {
      ExprPtr e = node(Expr::list, line_);
      while (!is_op("]")) {
        e->args.push_back(expression());
        if (!is_op("]")) expect_op(",");
      }
      ++p_;
      return e;
    }
    if (tok.kind == Token::op && tok.text == "{") {
      ExprPtr e = node(Expr::dict, line_);
      while (!is_op("}")) {
        e->args.push_back(expression());
        expect_op(":");
        e->args.push_back(expression());
        if (!is_op("}")) expect_op(",");
      }
      ++p_;
      return e;
    }
    error(fmt::format("unexpected '{}'", tok.text), line_);
  }

  std::vector<Token> t_;
  std::size_t p_ = 0;
  int line_;
};

// ---- statements ------------------------------------------------------------------------

struct Stmt;
using Body = std::vector<std::shared_ptr<Stmt>>;
struct Stmt {
  enum Kind { text_, output, if_, for_, set } kind;
  explicit Stmt(Kind k, std::string t = {}) : kind(k), text(std::move(t)) {}
  std::string text;                              // text; set: the name
  std::string attribute;                         // set ns.attribute
  std::vector<std::string> loop_vars;            // for
  ExprPtr expr;                                  // output, for (iterable), set (value)
  ExprPtr loop_filter;                           // for x in xs if cond
  std::vector<std::pair<ExprPtr, Body>> branches;  // if / elif
  Body body, else_body;                          // for; if: else
};

struct Tag {
  enum Kind { text, output, block } kind;
  std::string content;
  int line;
};

// Cuts the template into text and tags with Jinja2's whitespace rules as
// transformers sets them: trim_blocks (the newline after a block tag goes),
// lstrip_blocks (spaces before a block tag on its line go), and "-".

// Where an expression or statement tag ends: the first `close` outside a string literal, as
// Jinja's lexer reads the body's tokens before it looks for the end
// (Qwen2.5's template prints "...{{\"name\": ...}}..." inside a {{ }}).
std::size_t find_tag_end(std::string_view s, std::string_view close, std::size_t from) {
  char quote = 0;
  for (std::size_t i = from; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (s.compare(i, close.size(), close) == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::vector<Tag> cut(std::string_view s) {
  std::vector<Tag> out;
  std::size_t i = 0;
  int line = 1;
  bool strip_next = false, trim_newline = false;
  bool line_starting = true;  // the text about to come starts a line (Jinja2's lexer tracks the same)
  while (i <= s.size()) {
    std::size_t open = s.find('{', i);
    while (open != std::string_view::npos && open + 1 < s.size() && s[open + 1] != '{' && s[open + 1] != '%' &&
           s[open + 1] != '#') {
      open = s.find('{', open + 1);
    }
    if (open != std::string_view::npos && open + 1 >= s.size()) open = std::string_view::npos;
    std::string text(s.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i));
    if (strip_next) {
      const std::size_t k = text.find_first_not_of(" \t\r\n");
      text.erase(0, k == std::string::npos ? text.size() : k);
    } else if (trim_newline && !text.empty() && text[0] == '\n') {
      text.erase(0, 1);  // trim_blocks
      line_starting = true;
    }
    strip_next = trim_newline = false;
    if (open == std::string_view::npos) {
      out.push_back({Tag::text, text, line});
      break;
    }
    const char kind = s[open + 1];
    const char sign = open + 2 < s.size() ? s[open + 2] : ' ';
    if (sign == '-') {
      const std::size_t k = text.find_last_not_of(" \t\r\n");
      text.erase(k == std::string::npos ? 0 : k + 1);
    } else if (kind != '{' && sign != '+') {
      // lstrip_blocks: spaces and tabs between a line's start and a block tag go.
      const std::size_t nl = text.rfind('\n');
      const std::size_t from = nl == std::string::npos ? 0 : nl + 1;
      if ((nl != std::string::npos || line_starting) && text.find_first_not_of(" \t", from) == std::string::npos) {
        text.erase(from);
      }
    }
    for (char c : text) line += c == '\n';
    out.push_back({Tag::text, text, line});
    const std::string_view close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    const std::size_t end = kind == '#' ? s.find(close, open + 2) : find_tag_end(s, close, open + 2);
    if (end == std::string_view::npos) error(fmt::format("a '{{{}' is not closed", kind), line);
    const std::size_t body_start = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
    std::size_t body_end = end;
    if (body_end > body_start && s[body_end - 1] == '-') {
      strip_next = true;
      --body_end;
    } else if (kind != '{') {
      trim_newline = true;
    }
    if (kind != '#') out.push_back({kind == '{' ? Tag::output : Tag::block, std::string(s.substr(body_start, body_end - body_start)), line});
    for (char c : s.substr(open, end + 2 - open)) line += c == '\n';
    line_starting = false;
    i = end + 2;
  }
  return out;
}

class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Tag> tags) : tags_(std::move(tags)) {}

  Body parse() {
    std::string stop;
    Body b = body({}, stop);
    if (!stop.empty()) error(fmt::format("'{}' without its opening tag", stop), tags_[pos_ - 1].line);
    return b;
  }

 private:
  static std::string first_word(const std::string& s) {
    const std::size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    std::size_t e = b;
    while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    return s.substr(b, e - b);
  }
  // Statements until one of `ends` (returned in `stop`) or the template's end.
  Body body(const std::vector<std::string>& ends, std::string& stop) {
    Body out;
    while (pos_ < tags_.size()) {
      const Tag& tag = tags_[pos_++];
      if (tag.kind == Tag::text) {
        if (!tag.content.empty()) out.push_back(std::make_shared<Stmt>(Stmt::text_, tag.content));
        continue;
      }
      Parser p(lex(tag.content, tag.line), tag.line);
      if (tag.kind == Tag::output) {
        auto s = std::make_shared<Stmt>(Stmt::output);
        s->expr = p.expression();
        p.expect_end();
        out.push_back(s);
        continue;
      }
      const std::string word = first_word(tag.content);
      if (std::find(ends.begin(), ends.end(), word) != ends.end()) {
        stop = word;
        return out;
      }
      if (word == "if") {
        out.push_back(parse_if(tag));
      } else if (word == "for") {
        out.push_back(parse_for(tag));
      } else if (word == "set") {
        auto s = std::make_shared<Stmt>(Stmt::set);
        p.take_name();
        s->text = p.take_name();
        if (p.is_op(".")) {
          p.expect_op(".");
          s->attribute = p.take_name();
        }
        if (!p.is_op("=")) unsupported("a block 'set' (set without '=')", tag.line);
        p.expect_op("=");
        s->expr = p.expression();
        p.expect_end();
        out.push_back(s);
      } else if (word == "endif" || word == "endfor" || word == "else" || word == "elif") {
        error(fmt::format("'{}' without its opening tag", word), tag.line);
      } else {
        unsupported(fmt::format("the statement '{{% {} %}}'", word), tag.line);
      }
    }
    if (!ends.empty()) error(fmt::format("the template ends inside a block (expected '{}')", ends.back()), tags_.back().line);
    return out;
  }
  std::shared_ptr<Stmt> parse_if(const Tag& first) {
    auto s = std::make_shared<Stmt>(Stmt::if_);
    const Tag* tag = &first;
    for (;;) {
      Parser p(lex(tag->content, tag->line), tag->line);
      p.take_name();  // if / elif
      ExprPtr cond = p.expression();
      p.expect_end();
      std::string stop;
      Body b = body({"elif", "else", "endif"}, stop);
      s->branches.emplace_back(cond, std::move(b));
      if (stop == "elif") {
        tag = &tags_[pos_ - 1];
        continue;
      }
      if (stop == "else") {
        s->else_body = body({"endif"}, stop);
      }
      return s;
    }
  }
  std::shared_ptr<Stmt> parse_for(const Tag& tag) {
    auto s = std::make_shared<Stmt>(Stmt::for_);
    Parser p(lex(tag.content, tag.line), tag.line);
    p.take_name();
    s->loop_vars.push_back(p.take_name());
    while (p.is_op(",")) {
      p.expect_op(",");
      s->loop_vars.push_back(p.take_name());
    }
    if (!p.is_name("in")) error("expected 'in' in a for loop", tag.line);
    p.take_name();
    s->expr = p.iterable();
    if (p.is_name("if")) {
      p.take_name();
      s->loop_filter = p.expression();
    }
    if (p.is_name("recursive")) unsupported("a recursive loop", tag.line);
    p.expect_end();
    std::string stop;
    s->body = body({"else", "endfor"}, stop);
    if (stop == "else") s->else_body = body({"endfor"}, stop);
    return s;
  }

  std::vector<Tag> tags_;
  std::size_t pos_ = 0;
};

// ---- evaluation -----------------------------------------------------------------------------

class Renderer {
 public:
  explicit Renderer(std::map<std::string, Value> globals) { scopes_.push_back(std::move(globals)); }

  void run(const Body& body, std::string& out) {
    for (const auto& s : body) {
      switch (s->kind) {
        case Stmt::text_: out += s->text; break;
        case Stmt::output: out += to_output(eval(*s->expr)); break;
        case Stmt::if_: {
          bool done = false;
          for (const auto& [cond, b] : s->branches) {
            if (truthy(eval(*cond))) {
              run(b, out);
              done = true;
              break;
            }
          }
          if (!done) run(s->else_body, out);
          break;
        }
        case Stmt::for_: run_for(*s, out); break;
        case Stmt::set: {
          Value v = eval(*s->expr);
          if (!s->attribute.empty()) {
            Value target = lookup(s->text);
            if (!target.ns) error(fmt::format("'{}' is not a namespace", s->text), s->expr->line);
            (*target.ns)[s->attribute] = v.get();
          } else {
            scopes_.back()[s->text] = v;
          }
          break;
        }
      }
    }
  }

 private:
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->find(name); f != it->end()) return f->second;
    }
    return Value::undef();
  }

  static void bind(const Stmt& s, const json& item, std::map<std::string, Value>& scope) {
    if (s.loop_vars.size() == 1) {
      scope[s.loop_vars[0]] = Value{item};
      return;
    }
    if (!item.is_array() || item.size() != s.loop_vars.size()) {
      error(fmt::format("cannot unpack {} into {} names", py_repr(item), s.loop_vars.size()), s.expr->line);
    }
    for (std::size_t v = 0; v < s.loop_vars.size(); ++v) scope[s.loop_vars[v]] = Value{item[v]};
  }

  void run_for(const Stmt& s, std::string& out) {
    const Value seq = eval(*s.expr);
    std::vector<json> items;
    const json& j = seq.get();
    if (seq.undefined || j.is_null()) {
      // Jinja loops over nothing
    } else if (j.is_array()) {
      items.assign(j.begin(), j.end());
    } else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) items.push_back(it.key());
    } else if (j.is_string()) {
      const std::string& str = j.get_ref<const std::string&>();
      for (std::size_t i = 0; i < str.size();) {
        const std::size_t n = std::max<std::size_t>(1, utf8_char_length(str, i));
        items.push_back(str.substr(i, n));
        i += n;
      }
    } else {
      error(fmt::format("cannot loop over {}", py_repr(j)), s.expr->line);
    }
    if (s.loop_filter) {  // filtered first: loop.index and loop.length count what is left
      std::vector<json> kept;
      for (const json& item : items) {
        std::map<std::string, Value> scope;
        bind(s, item, scope);
        scopes_.push_back(std::move(scope));
        const bool keep = truthy(eval(*s.loop_filter));
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      run(s.else_body, out);
      return;
    }
    // Jinja2: a loop's body has its own scope; `set` inside it does not leak out.
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::map<std::string, Value> scope;
      const auto n = static_cast<std::int64_t>(items.size()), k = static_cast<std::int64_t>(i);
      scope["loop"] = Value{json{{"index0", k}, {"index", k + 1}, {"first", i == 0}, {"last", k == n - 1},
                                 {"length", n}, {"revindex", n - k}, {"revindex0", n - k - 1},
                                 {"previtem", i > 0 ? items[i - 1] : json()}, {"nextitem", k + 1 < n ? items[i + 1] : json()}}};
      bind(s, items[i], scope);
      scopes_.push_back(std::move(scope));
      run(s.body, out);
      scopes_.pop_back();
    }
  }

  static const std::string& str_of(const Value& v, const Expr& e, const char* what) {
    if (!v.get().is_string()) error(fmt::format("{} needs a string, not {}", what, py_repr(v.get())), e.line);
    return v.get().get_ref<const std::string&>();
  }

  static std::int64_t index_of(std::int64_t i, std::size_t size) { return i < 0 ? i + static_cast<std::int64_t>(size) : i; }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::literal: return Value{e.value};
      case Expr::name: return lookup(e.text);
      case Expr::list: {
        json a = json::array();
        for (const auto& x : e.args) a.push_back(eval(*x).get());
        return Value{a};
      }
      case Expr::dict: {
        json d = json::object();
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) d[py_str(eval(*e.args[i]).get())] = eval(*e.args[i + 1]).get();
        return Value{d};
      }
      case Expr::attr: {
        const Value base = eval(*e.args[0]);
        const json& j = base.get();
        if (j.is_object() && j.contains(e.text)) return Value{j[e.text]};
        if (base.undefined) error(fmt::format("'{}' of an undefined value", e.text), e.line);
        return Value::undef();
      }
      case Expr::item: {
        const Value base = eval(*e.args[0]);
        const Value key = eval(*e.args[1]);
        const json& j = base.get();
        if (base.undefined) error("a subscript of an undefined value", e.line);
        if (j.is_object()) {
          if (key.get().is_string() && j.contains(key.get().get<std::string>())) return Value{j[key.get().get<std::string>()]};
          return Value::undef();
        }
        if ((j.is_array() || j.is_string()) && key.get().is_number_integer()) {
          const std::int64_t i = index_of(key.get().get<std::int64_t>(), j.is_array() ? j.size() : code_points(j.get<std::string>()));
          if (j.is_array()) {
            if (i < 0 || i >= static_cast<std::int64_t>(j.size())) return Value::undef();
            return Value{j[static_cast<std::size_t>(i)]};
          }
          return Value{slice_string(j.get<std::string>(), i, i + 1, 1)};
        }
        return Value::undef();
      }
      case Expr::slice: return slice(e);
      case Expr::call: return call(e);
      case Expr::filter: return filter(e);
      case Expr::test: {
        const bool r = test(e);
        return Value{json(e.negated ? !r : r)};
      }
      case Expr::unary: {
        const Value v = eval(*e.args[0]);
        if (e.text == "not") return Value{json(!truthy(v))};
        const json& j = v.get();
        if (j.is_number_integer()) return Value{json(-j.get<std::int64_t>())};
        if (j.is_number()) return Value{json(-j.get<double>())};
        error("'-' of a value that is not a number", e.line);
      }
      case Expr::binary: return binary(e);
      case Expr::conditional: {
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value::undef();
      }
    }
    return Value::undef();
  }

  static std::string slice_string(const std::string& s, std::int64_t start, std::int64_t stop, std::int64_t step) {
    std::vector<std::string> chars;
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t n = std::max<std::size_t>(1, utf8_char_length(s, i));
      chars.push_back(s.substr(i, n));
      i += n;
    }
    std::string out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out += chars[static_cast<std::size_t>(i)];
    return out;
  }

  // Python's slice bounds for a sequence of `n`.
  static void bounds(std::optional<std::int64_t> a, std::optional<std::int64_t> b, std::int64_t step, std::int64_t n,
                     std::int64_t& start, std::int64_t& stop) {
    const auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::max(lo, std::min(hi, v)); };
    if (step > 0) {
      start = a ? clamp(*a < 0 ? *a + n : *a, 0, n) : 0;
      stop = b ? clamp(*b < 0 ? *b + n : *b, 0, n) : n;
    } else {
      start = a ? clamp(*a < 0 ? *a + n : *a, -1, n - 1) : n - 1;
      stop = b ? clamp(*b < 0 ? *b + n : *b, -1, n - 1) : -1;
    }
  }

  Value slice(const Expr& e) {
    const Value base = eval(*e.args[0]);
    const auto num = [&](const ExprPtr& x) -> std::optional<std::int64_t> {
      if (!x) return std::nullopt;
      const Value v = eval(*x);
      if (v.get().is_null()) return std::nullopt;
      if (!v.get().is_number_integer()) error("a slice bound that is not an integer", e.line);
      return v.get().get<std::int64_t>();
    };
    const std::int64_t step = num(e.args[3]).value_or(1);
    if (step == 0) error("a slice step of 0", e.line);
    const json& j = base.get();
    std::int64_t start = 0, stop = 0;
    if (j.is_array()) {
      bounds(num(e.args[1]), num(e.args[2]), step, static_cast<std::int64_t>(j.size()), start, stop);
      json out = json::array();
      for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(j[static_cast<std::size_t>(i)]);
      return Value{out};
    }
    if (j.is_string()) {
      bounds(num(e.args[1]), num(e.args[2]), step, static_cast<std::int64_t>(code_points(j.get<std::string>())), start, stop);
      return Value{slice_string(j.get<std::string>(), start, stop, step)};
    }
    error(fmt::format("a slice of {}", py_repr(j)), e.line);
  }

  static json compare_key(const json& j) { return j; }

  Value binary(const Expr& e) {
    if (e.text == "and") {
      Value a = eval(*e.args[0]);
      return truthy(a) ? eval(*e.args[1]) : a;
    }
    if (e.text == "or") {
      Value a = eval(*e.args[0]);
      return truthy(a) ? a : eval(*e.args[1]);
    }
    const Value av = eval(*e.args[0]), bv = eval(*e.args[1]);
    const json &a = av.get(), &b = bv.get();
    const std::string& op = e.text;
    if (op == "~") return Value{to_output(av) + to_output(bv)};
    if (op == "==" || op == "!=") {
      bool eq = (av.undefined && bv.undefined) ||
                (!av.undefined && !bv.undefined &&
                 ((a.is_number() && b.is_number()) ? a.get<double>() == b.get<double>() : a == b));
      return Value{json(op == "==" ? eq : !eq)};
    }
    if (op == "in" || op == "not in") {
      bool found = false;
      if (b.is_string() && a.is_string()) found = b.get<std::string>().find(a.get<std::string>()) != std::string::npos;
      else if (b.is_array()) found = std::find(b.begin(), b.end(), a) != b.end();
      else if (b.is_object() && a.is_string()) found = b.contains(a.get<std::string>());
      else if (!bv.undefined && !b.is_null()) error(fmt::format("'in' of {}", py_repr(b)), e.line);
      else error("'in' of an undefined or none value", e.line);
      return Value{json(op == "in" ? found : !found)};
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int c = 0;
      if (a.is_number() && b.is_number()) c = a.get<double>() < b.get<double>() ? -1 : a.get<double>() > b.get<double>() ? 1 : 0;
      else if (a.is_string() && b.is_string()) c = a.get<std::string>().compare(b.get<std::string>());
      else error(fmt::format("'{}' between {} and {}", op, py_repr(a), py_repr(b)), e.line);
      const bool r = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
      return Value{json(r)};
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value{json(a.get<std::string>() + b.get<std::string>())};
      if (a.is_array() && b.is_array()) {
        json out = a;
        for (const auto& x : b) out.push_back(x);
        return Value{out};
      }
    }
    if (a.is_number() && b.is_number() && !a.is_boolean() && !b.is_boolean()) {
      const bool ints = a.is_number_integer() && b.is_number_integer();
      if (ints && op != "/") {
        const std::int64_t x = a.get<std::int64_t>(), y = b.get<std::int64_t>();
        if ((op == "//" || op == "%") && y == 0) error("a division by zero", e.line);
        if (op == "+") return Value{json(x + y)};
        if (op == "-") return Value{json(x - y)};
        if (op == "*") return Value{json(x * y)};
        const std::int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));  // Python floors
        if (op == "//") return Value{json(q)};
        if (op == "%") return Value{json(x - q * y)};
      }
      const double x = a.get<double>(), y = b.get<double>();
      if (op == "+") return Value{json(x + y)};
      if (op == "-") return Value{json(x - y)};
      if (op == "*") return Value{json(x * y)};
      if (y == 0) error("a division by zero", e.line);
      if (op == "/") return Value{json(x / y)};
      if (op == "//") return Value{json(std::floor(x / y))};
      if (op == "%") return Value{json(x - std::floor(x / y) * y)};
    }
    if (op == "*" && a.is_string() && b.is_number_integer()) {
      std::string out;
      for (std::int64_t i = 0; i < b.get<std::int64_t>(); ++i) out += a.get<std::string>();
      return Value{out};
    }
    error(fmt::format("'{}' between {} and {}", op, av.undefined ? "an undefined value" : py_repr(a),
                      bv.undefined ? "an undefined value" : py_repr(b)),
          e.line);
  }

  bool test(const Expr& e) {
    const Value v = eval(*e.args[0]);
    const json& j = v.get();
    const std::string& t = e.text;
    if (t == "defined") return !v.undefined;
    if (t == "undefined") return v.undefined;
    if (v.undefined && t != "none") {
      if (t == "string" || t == "number" || t == "mapping" || t == "sequence" || t == "iterable" || t == "true" ||
          t == "false" || t == "boolean" || t == "integer") return false;
    }
    if (t == "none") return !v.undefined && j.is_null();
    if (t == "string") return j.is_string();
    if (t == "number") return j.is_number();
    if (t == "integer") return j.is_number_integer();
    if (t == "boolean") return j.is_boolean();
    if (t == "true") return j.is_boolean() && j.get<bool>();
    if (t == "false") return j.is_boolean() && !j.get<bool>();
    if (t == "mapping") return j.is_object() || v.ns != nullptr;
    if (t == "sequence" || t == "iterable") return j.is_array() || j.is_string() || j.is_object();
    if (t == "odd" || t == "even") {
      if (!j.is_number_integer()) error(fmt::format("the test '{}' of {}", t, py_repr(j)), e.line);
      return (j.get<std::int64_t>() % 2 != 0) == (t == "odd");
    }
    unsupported(fmt::format("the test '{}'", t), e.line);
  }

  Value arg(const Expr& e, std::size_t i, const char* name, Value fallback = Value::undef()) {
    if (i < e.args.size()) return eval(*e.args[i]);
    for (const auto& [k, x] : e.kwargs) {
      if (k == name) return eval(*x);
    }
    return fallback;
  }

  static std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
    std::size_t b = 0, end = s.size();
    if (left) while (b < end && chars.find(s[b]) != std::string::npos) ++b;
    if (right) while (end > b && chars.find(s[end - 1]) != std::string::npos) --end;
    return s.substr(b, end - b);
  }
  static constexpr const char* kWhitespace = " \t\n\r\v\f";

  Value filter(const Expr& e) {
    const Value v = eval(*e.args[0]);
    const json& j = v.get();
    const std::string& f = e.text;
    if (f == "length" || f == "count") {
      if (j.is_string()) return Value{json(static_cast<std::int64_t>(code_points(j.get<std::string>())))};
      if (j.is_array() || j.is_object()) return Value{json(static_cast<std::int64_t>(j.size()))};
      if (v.undefined) return Value{json(0)};
      error(fmt::format("the length of {}", py_repr(j)), e.line);
    }
    if (f == "trim") return Value{json(strip_chars(to_output(v), kWhitespace, true, true))};
    if (f == "upper" || f == "lower") {
      std::string s = to_output(v);
      for (char& c : s) c = static_cast<char>(f == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      return Value{json(s)};
    }
    if (f == "capitalize") {
      std::string s = to_output(v);
      for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i == 0 ? std::toupper(static_cast<unsigned char>(s[i])) : std::tolower(static_cast<unsigned char>(s[i])));
      return Value{json(s)};
    }
    if (f == "string") return Value{json(to_output(v))};
    if (f == "int") {
      if (j.is_number()) return Value{json(static_cast<std::int64_t>(j.get<double>()))};
      if (j.is_string()) {
        try {
          return Value{json(std::stoll(j.get<std::string>()))};
        } catch (...) {
          return Value{json(0)};
        }
      }
      return Value{json(0)};
    }
    if (f == "tojson") {
      const Value indent = arg(e, 1, "indent");
      return Value{json(py_json(j, indent.get().is_number_integer() ? static_cast<int>(indent.get().get<std::int64_t>()) : 0))};
    }
    if (f == "first" || f == "last") {
      if (j.is_array()) return j.empty() ? Value::undef() : Value{f == "first" ? j.front() : j.back()};
      if (j.is_string()) {
        const std::string& s = j.get<std::string>();
        const auto n = static_cast<std::int64_t>(code_points(s));
        if (n == 0) return Value::undef();
        return Value{slice_string(s, f == "first" ? 0 : n - 1, f == "first" ? 1 : n, 1)};
      }
      error(fmt::format("the filter '{}' of {}", f, py_repr(j)), e.line);
    }
    if (f == "join") {
      const Value sep = arg(e, 1, "d", Value{json("")});
      std::string out;
      if (!j.is_array()) error(fmt::format("join of {}", py_repr(j)), e.line);
      for (std::size_t i = 0; i < j.size(); ++i) out += (i ? to_output(sep) : "") + py_str(j[i]);
      return Value{json(out)};
    }
    if (f == "default" || f == "d") {
      const Value fallback = arg(e, 1, "default_value", Value{json("")});
      const bool boolean = truthy(arg(e, 2, "boolean", Value{json(false)}));
      if (v.undefined || (boolean && !truthy(v))) return fallback;
      return v;
    }
    if (f == "list") {
      if (j.is_array()) return v;
      json out = json::array();
      if (j.is_object()) for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
      else if (j.is_string()) out = eval_chars(j.get<std::string>());
      return Value{out};
    }
    if (f == "reverse") {
      if (j.is_array()) return Value{json(j.rbegin() == j.rend() ? json::array() : json(std::vector<json>(j.rbegin(), j.rend())))};
      if (j.is_string()) {
        const auto n = static_cast<std::int64_t>(code_points(j.get<std::string>()));
        return Value{slice_string(j.get<std::string>(), n - 1, -1, -1)};
      }
    }
    if (f == "items") return method_items(j, e);
    if (f == "replace") {
      const std::string s = to_output(v);
      const std::string from = to_output(arg(e, 1, "old")), to = to_output(arg(e, 2, "new"));
      return Value{json(replace(s, from, to))};
    }
    unsupported(fmt::format("the filter '{}'", f), e.line);
  }

  static json eval_chars(const std::string& s) {
    json out = json::array();
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t n = std::max<std::size_t>(1, utf8_char_length(s, i));
      out.push_back(s.substr(i, n));
      i += n;
    }
    return out;
  }

  static std::string replace(const std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    std::string out;
    std::size_t pos = 0;
    for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) out += s.substr(pos, hit - pos) + to;
    return out + s.substr(pos);
  }

  static Value method_items(const json& j, const Expr& e) {
    if (!j.is_object()) error("items() of a value that is not a mapping", e.line);
    json out = json::array();
    for (auto it = j.begin(); it != j.end(); ++it) out.push_back(json::array({it.key(), it.value()}));
    return Value{out};
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.args[0];
    std::vector<Value> args;
    for (std::size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
    const auto a = [&](std::size_t i) -> const Value& {
      static const Value none = Value::undef();
      return i < args.size() ? args[i] : none;
    };
    if (callee.kind == Expr::name) {
      if (callee.text == "namespace") {
        auto ns = std::make_shared<json>(json::object());
        for (const auto& [k, x] : e.kwargs) (*ns)[k] = eval(*x).get();
        return Value::name_space(ns);
      }
      if (callee.text == "raise_exception") {
        throw InvalidArgument("the chat template refuses these messages: " + to_output(a(0)));
      }
      if (callee.text == "range") {
        std::int64_t start = 0, stop = 0, step = 1;
        if (args.size() == 1) stop = a(0).get().get<std::int64_t>();
        else if (args.size() >= 2) {
          start = a(0).get().get<std::int64_t>();
          stop = a(1).get().get<std::int64_t>();
          if (args.size() == 3) step = a(2).get().get<std::int64_t>();
        }
        if (step == 0) error("range() with a step of 0", e.line);
        json out = json::array();
        for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
          out.push_back(i);
          if (out.size() > 1'000'000) error("range() of more than a million numbers", e.line);
        }
        return Value{out};
      }
      unsupported(fmt::format("the function '{}'", callee.text), e.line);
    }
    if (callee.kind != Expr::attr) unsupported("a call of an expression", e.line);
    const Value self = eval(*callee.args[0]);
    const json& j = self.get();
    const std::string& m = callee.text;
    if (j.is_string()) {
      const std::string& s = j.get_ref<const std::string&>();
      if (m == "strip" || m == "lstrip" || m == "rstrip") {
        const std::string chars = a(0).undefined || a(0).get().is_null() ? kWhitespace : to_output(a(0));
        return Value{json(strip_chars(s, chars, m != "rstrip", m != "lstrip"))};
      }
      if (m == "startswith") return Value{json(s.starts_with(to_output(a(0))))};
      if (m == "endswith") return Value{json(s.ends_with(to_output(a(0))))};
      if (m == "upper" || m == "lower") {
        std::string out = s;
        for (char& c : out) c = static_cast<char>(m == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
        return Value{json(out)};
      }
      if (m == "title" || m == "capitalize") {
        std::string out = s;
        bool start = true;
        for (std::size_t i = 0; i < out.size(); ++i) {
          const auto c = static_cast<unsigned char>(out[i]);
          out[i] = static_cast<char>(start ? std::toupper(c) : std::tolower(c));
          start = m == "title" ? !std::isalpha(c) : false;
        }
        return Value{json(out)};
      }
      if (m == "replace") return Value{json(replace(s, to_output(a(0)), to_output(a(1))))};
      if (m == "split") {
        json out = json::array();
        if (a(0).undefined || a(0).get().is_null()) {
          std::size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::string_view(kWhitespace).find(s[i]) != std::string_view::npos) ++i;
            std::size_t k = i;
            while (k < s.size() && std::string_view(kWhitespace).find(s[k]) == std::string_view::npos) ++k;
            if (k > i) out.push_back(s.substr(i, k - i));
            i = k;
          }
          return Value{out};
        }
        const std::string sep = to_output(a(0));
        if (sep.empty()) error("split() with an empty separator", e.line);
        std::size_t pos = 0;
        for (std::size_t hit; (hit = s.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) out.push_back(s.substr(pos, hit - pos));
        out.push_back(s.substr(pos));
        return Value{out};
      }
    }
    if (j.is_object()) {
      if (m == "get") {
        const std::string key = to_output(a(0));
        if (j.contains(key)) return Value{j[key]};
        return args.size() > 1 ? a(1) : Value{json()};
      }
      if (m == "items") return method_items(j, e);
      if (m == "keys" || m == "values") {
        json out = json::array();
        for (auto it = j.begin(); it != j.end(); ++it) out.push_back(m == "keys" ? json(it.key()) : it.value());
        return Value{out};
      }
    }
    unsupported(fmt::format("the method '{}' of {}", m, self.undefined ? "an undefined value" : std::string(j.type_name())), e.line);
  }

  std::vector<std::map<std::string, Value>> scopes_;
};

}  // namespace

std::string render_chat_template(std::string_view template_text, std::string_view messages_json,
                                 const ChatRenderOptions& options) {
  json messages;
  try {
    messages = json::parse(messages_json);
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("the messages are not valid JSON: {}", e.what()));
  }
  if (!messages.is_array()) throw InvalidArgument("the messages must be a JSON list of {\"role\", \"content\"} objects");
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content")) {
      throw InvalidArgument(fmt::format("each message needs a \"role\" string and a \"content\": {}", m.dump()));
    }
  }
  const Body body = TemplateParser(cut(template_text)).parse();
  std::map<std::string, Value> globals;
  globals["messages"] = Value{messages};
  globals["add_generation_prompt"] = Value{json(options.add_generation_prompt)};
  globals["bos_token"] = Value{json(options.bos_token)};
  globals["eos_token"] = Value{json(options.eos_token)};
  globals["tools"] = Value{json()};
  globals["documents"] = Value{json()};
  std::string out;
  Renderer(std::move(globals)).run(body, out);
  return out;
}

}  // namespace nuvec::text
