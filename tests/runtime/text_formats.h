#pragma once
// Independent readers of the CSV and JSON that commsim prints, for tests: an RFC 4180 CSV reader
// and a small strict JSON parser (objects, arrays, strings with escapes, numbers, true/false/null;
// NaN and inf are rejected, as JSON has no such numbers).
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace commsim::test {

// ---- an RFC 4180 CSV reader

inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, row_open = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field += ch;
      }
      continue;
    }
    row_open = true;
    if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      row.push_back(field);
      field.clear();
    } else if (ch == '\n') {
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
      row_open = false;
    } else {
      field += ch;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  EXPECT_FALSE(row_open) << "last line has no newline";
  return rows;
}

// ---- a small JSON parser (objects, arrays, strings with escapes, numbers, true/false/null)

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, JsonArray, JsonObject> v;
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  const JsonArray& arr() const { return std::get<JsonArray>(v); }
  const JsonObject& obj() const { return std::get<JsonObject>(v); }
  const Json& operator[](const std::string& k) const { return obj().at(k); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json document() {
    Json j = value();
    ws();
    if (i_ != s_.size()) throw std::runtime_error("trailing text at " + std::to_string(i_));
    return j;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) throw std::runtime_error("unexpected end");
    return s_[i_];
  }
  void expect(char ch) {
    if (peek() != ch) throw std::runtime_error(std::string("expected ") + ch + " at " + std::to_string(i_));
    ++i_;
  }
  bool literal(const char* w) {
    std::size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  Json value() {
    char ch = peek();
    if (ch == '{') {
      ++i_;
      JsonObject o;
      if (peek() == '}') {
        ++i_;
        return Json{o};
      }
      for (;;) {
        std::string k = string();
        expect(':');
        o.emplace(k, value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return Json{o};
      }
    }
    if (ch == '[') {
      ++i_;
      JsonArray a;
      if (peek() == ']') {
        ++i_;
        return Json{a};
      }
      for (;;) {
        a.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return Json{a};
      }
    }
    if (ch == '"') return Json{string()};
    if (literal("null")) return Json{nullptr};
    if (literal("true")) return Json{true};
    if (literal("false")) return Json{false};
    std::size_t used = 0;
    double d = std::stod(s_.substr(i_, 64), &used);  // throws on anything else (NaN, inf are not JSON)
    std::string tok = s_.substr(i_, used);
    if (tok.find_first_of("nNiI") != std::string::npos) throw std::runtime_error("not a JSON number: " + tok);
    i_ += used;
    return Json{d};
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char ch = s_[i_++];
      if (static_cast<unsigned char>(ch) < 0x20) throw std::runtime_error("raw control character in string");
      if (ch != '\\') {
        out += ch;
        continue;
      }
      char e = s_.at(i_++);
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'u': out += static_cast<char>(std::stoi(s_.substr(i_, 4), nullptr, 16)); i_ += 4; break;
        default: throw std::runtime_error("bad escape");
      }
    }
    expect('"');
    return out;
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

}  // namespace commsim::test
