#pragma once
// SchemaRegex: the `pattern` of an OpenAPI schema, matched as the API server matches it (Go's
// regexp, RE2 syntax, unanchored unless the pattern says ^ or $), in time linear in the text: a
// Pike VM over the code points of the text (no backtracking, no recursion over the text), so a
// hostile 8 MiB string costs one pass. Pure.
//
// The subset of RE2 it reads is what CRD patterns use: literals, `.`, escapes (`\+`, `\.`, `\d`,
// `\w`, `\s` and their negations), classes `[a-z0-9_]` and `[^...]`, groups `(...)` and
// `(?:...)`, `|`, the quantifiers `?` `*` `+` (a trailing `?` for laziness is accepted: it does
// not change whether a text matches), and the anchors `^` `$` (text start and end). Anything
// else (counted repetition `{m,n}`, flags, backreferences, Unicode classes) is refused by
// Compile, so a pattern is never matched wrongly.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfjob::api {

class SchemaRegex {
 public:
  // nullopt when `pattern` uses syntax outside the subset above, or is not valid RE2.
  static std::optional<SchemaRegex> Compile(std::string_view pattern);

  // Whether some part of `text` matches (the whole of it with ^...$). Bytes that are not UTF-8
  // are one code point each (U+FFFD), as Go reads them.
  bool Matches(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

  // The program, public for the compiler in the .cc.
  enum class Op { kRanges, kSplit, kJump, kTextStart, kTextEnd, kMatch };
  struct Inst {
    Op op = Op::kMatch;
    int x = 0;  // kRanges: index into ranges_; kSplit, kJump: target
    int y = 0;  // kSplit: second target
  };
  struct Ranges {
    std::vector<std::pair<char32_t, char32_t>> ranges;
    bool negated = false;
    bool Contains(char32_t r) const;
  };

 private:
  std::string pattern_;
  std::vector<Inst> program_;
  std::vector<Ranges> classes_;
};

}  // namespace tfjob::api
