#include "api/schema_regex.h"

#include <memory>

#include "api/field_error.h"

namespace tfjob::api {
namespace {

using Inst = SchemaRegex::Inst;
using Op = SchemaRegex::Op;
using Ranges = SchemaRegex::Ranges;

// Nesting of groups a pattern may have: CRD patterns have two or three levels.
constexpr int kMaxGroupDepth = 32;
constexpr char32_t kReplacement = 0xfffd;

struct Node {
  enum class Kind { kClass, kConcat, kAlternate, kStar, kPlus, kQuest, kTextStart, kTextEnd };
  Kind kind = Kind::kConcat;
  Ranges ranges;                             // kClass
  std::vector<std::unique_ptr<Node>> parts;  // kConcat, kAlternate: its parts; repeats: one
};
using NodePtr = std::unique_ptr<Node>;

NodePtr Make(Node::Kind kind) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  return n;
}

// \d \w \s (and upper case: negated) as ranges; false for another letter.
bool PerlClass(char c, Ranges* out) {
  switch (c | 0x20) {
    case 'd': out->ranges = {{'0', '9'}}; break;
    case 'w': out->ranges = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; break;
    case 's': out->ranges = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}}; break;
    default: return false;
  }
  out->negated = c >= 'A' && c <= 'Z';
  return true;
}

// Escapes RE2 reads as the character itself: punctuation, and the usual control letters.
std::optional<char32_t> EscapedLiteral(char c) {
  switch (c) {
    case 'n': return U'\n';
    case 't': return U'\t';
    case 'r': return U'\r';
    case 'f': return U'\f';
    case 'v': return U'\v';
    default: break;
  }
  if ((c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e))
    return static_cast<char32_t>(c);
  return std::nullopt;
}

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  NodePtr Parse() {
    NodePtr n = Alternate(0);
    return ok_ && pos_ == p_.size() ? std::move(n) : nullptr;
  }

 private:
  bool More() const { return ok_ && pos_ < p_.size(); }
  NodePtr Fail() {
    ok_ = false;
    return nullptr;
  }

  // One code point of the pattern (U+FFFD for a byte that is not UTF-8, which Go refuses).
  char32_t Rune() {
    char32_t r = kReplacement;
    size_t n = DecodeUtf8(p_, pos_, &r);
    if (n == 0) ok_ = false;
    pos_ += n == 0 ? 1 : n;
    return r;
  }

  NodePtr Alternate(int depth) {
    auto alt = Make(Node::Kind::kAlternate);
    alt->parts.push_back(Concat(depth));
    while (More() && p_[pos_] == '|') {
      ++pos_;
      alt->parts.push_back(Concat(depth));
    }
    if (!ok_) return nullptr;
    return alt->parts.size() == 1 ? std::move(alt->parts[0]) : std::move(alt);
  }

  NodePtr Concat(int depth) {
    auto cat = Make(Node::Kind::kConcat);
    while (More() && p_[pos_] != '|' && p_[pos_] != ')') {
      NodePtr atom = Repeats(Atom(depth));
      if (!ok_) return nullptr;
      cat->parts.push_back(std::move(atom));
    }
    return cat;
  }

  bool AtQuantifier() const { return More() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?'); }

  // `atom` with the quantifiers that follow it.
  NodePtr Repeats(NodePtr atom) {
    while (ok_ && AtQuantifier()) {
      char q = p_[pos_++];
      if (atom->kind == Node::Kind::kTextStart || atom->kind == Node::Kind::kTextEnd) return Fail();
      auto rep = Make(q == '*' ? Node::Kind::kStar : q == '+' ? Node::Kind::kPlus : Node::Kind::kQuest);
      rep->parts.push_back(std::move(atom));
      atom = std::move(rep);
      if (More() && p_[pos_] == '?') ++pos_;  // lazy: the same set of matches
      if (AtQuantifier()) return Fail();      // RE2: a bad repetition operator
    }
    return atom;
  }

  NodePtr Atom(int depth) {
    char c = p_[pos_];
    if (c == '(') return Group(depth);
    if (c == '[') return Class();
    if (c == '*' || c == '+' || c == '?' || c == '{') return Fail();  // a repeat of nothing, or {m,n}
    ++pos_;
    if (c == '^') return Make(Node::Kind::kTextStart);
    if (c == '$') return Make(Node::Kind::kTextEnd);
    auto n = Make(Node::Kind::kClass);
    if (c == '.') {
      n->ranges.ranges = {{U'\n', U'\n'}};  // every code point but a newline
      n->ranges.negated = true;
      return n;
    }
    if (c == '\\') {
      if (pos_ >= p_.size()) return Fail();
      char e = p_[pos_++];
      if (PerlClass(e, &n->ranges)) return n;
      std::optional<char32_t> lit = EscapedLiteral(e);
      if (!lit) return Fail();
      n->ranges.ranges = {{*lit, *lit}};
      return n;
    }
    --pos_;
    char32_t r = Rune();
    n->ranges.ranges = {{r, r}};
    return n;
  }

  NodePtr Group(int depth) {
    ++pos_;  // '('
    if (depth >= kMaxGroupDepth) return Fail();
    if (p_.substr(pos_).starts_with("?:")) {
      pos_ += 2;
    } else if (More() && p_[pos_] == '?') {
      return Fail();  // flags and named groups
    }
    NodePtr inner = Alternate(depth + 1);
    if (!More() || p_[pos_] != ')') return Fail();
    ++pos_;
    return inner;
  }

  // One member of a class: a code point, an escaped one, or (through *perl) \d \w \s.
  std::optional<char32_t> ClassRune(Ranges* perl) {
    if (p_[pos_] != '\\') return Rune();
    ++pos_;
    if (pos_ >= p_.size()) return std::nullopt;
    char e = p_[pos_++];
    if (perl != nullptr && e != 'D' && e != 'W' && e != 'S' && PerlClass(e, perl)) return std::nullopt;
    return EscapedLiteral(e);
  }

  NodePtr Class() {
    ++pos_;  // '['
    auto n = Make(Node::Kind::kClass);
    if (More() && p_[pos_] == '^') {
      n->ranges.negated = true;
      ++pos_;
    }
    bool first = true;
    while (More() && (p_[pos_] != ']' || first)) {
      first = false;
      if (!ClassMember(&n->ranges)) return Fail();
    }
    if (!More()) return Fail();
    ++pos_;  // ']'
    return n;
  }

  // One member of a class into `out`: a code point, a range `a-z`, or \d \w \s.
  bool ClassMember(Ranges* out) {
    if (p_.substr(pos_).starts_with("[:")) return false;  // POSIX classes
    Ranges perl;
    std::optional<char32_t> lo = ClassRune(&perl);
    if (!lo) {
      out->ranges.insert(out->ranges.end(), perl.ranges.begin(), perl.ranges.end());
      return !perl.ranges.empty();
    }
    char32_t hi = *lo;
    if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
      ++pos_;
      std::optional<char32_t> h = ClassRune(nullptr);
      if (!h || *h < *lo) return false;
      hi = *h;
    }
    out->ranges.emplace_back(*lo, hi);
    return true;
  }

  std::string_view p_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class Compiler {
 public:
  Compiler(std::vector<Inst>* program, std::vector<Ranges>* classes) : program_(*program), classes_(*classes) {}

  void Emit(const Node& n) {
    switch (n.kind) {
      case Node::Kind::kClass:
        classes_.push_back(n.ranges);
        Add({Op::kRanges, static_cast<int>(classes_.size() - 1), 0});
        return;
      case Node::Kind::kConcat:
        for (const auto& p : n.parts) Emit(*p);
        return;
      case Node::Kind::kAlternate: EmitAlternate(n, 0); return;
      case Node::Kind::kStar: {  // L1: split L2, L3; L2: body; jump L1; L3:
        int split = Add({Op::kSplit, 0, 0});
        program_[split].x = Here();
        Emit(*n.parts[0]);
        Add({Op::kJump, split, 0});
        program_[split].y = Here();
        return;
      }
      case Node::Kind::kPlus: {  // L1: body; split L1, L2; L2:
        int start = Here();
        Emit(*n.parts[0]);
        Add({Op::kSplit, start, Here() + 1});
        return;
      }
      case Node::Kind::kQuest: {  // split L1, L2; L1: body; L2:
        int split = Add({Op::kSplit, 0, 0});
        program_[split].x = Here();
        Emit(*n.parts[0]);
        program_[split].y = Here();
        return;
      }
      case Node::Kind::kTextStart: Add({Op::kTextStart, 0, 0}); return;
      case Node::Kind::kTextEnd: Add({Op::kTextEnd, 0, 0}); return;
    }
  }

 private:
  int Here() const { return static_cast<int>(program_.size()); }
  int Add(Inst i) {
    program_.push_back(i);
    return Here() - 1;
  }
  // parts[k] | parts[k+1] | ...: split L1, L2; L1: parts[k]; jump end; L2: the rest.
  void EmitAlternate(const Node& n, size_t k) {
    if (k + 1 == n.parts.size()) {
      Emit(*n.parts[k]);
      return;
    }
    int split = Add({Op::kSplit, 0, 0});
    program_[split].x = Here();
    Emit(*n.parts[k]);
    int jump = Add({Op::kJump, 0, 0});
    program_[split].y = Here();
    EmitAlternate(n, k + 1);
    program_[jump].x = Here();
  }

  std::vector<Inst>& program_;
  std::vector<Ranges>& classes_;
};

// The threads of one step of the Pike VM: a set of program counters, each added once.
class ThreadList {
 public:
  explicit ThreadList(size_t n) : mark_(n, 0) {}
  void Clear() {
    ++generation_;
    pcs_.clear();
  }
  // Adds pc and what it reaches without reading a code point; true when that reaches kMatch.
  bool Add(const std::vector<Inst>& program, int pc, bool at_start, bool at_end) {
    std::vector<int>& stack = stack_;
    stack.assign(1, pc);
    bool matched = false;
    while (!stack.empty()) {
      int p = stack.back();
      stack.pop_back();
      if (mark_[static_cast<size_t>(p)] == generation_) continue;
      mark_[static_cast<size_t>(p)] = generation_;
      const Inst& i = program[static_cast<size_t>(p)];
      switch (i.op) {
        case Op::kRanges: pcs_.push_back(p); break;
        case Op::kJump: stack.push_back(i.x); break;
        case Op::kSplit:
          stack.push_back(i.y);
          stack.push_back(i.x);
          break;
        case Op::kTextStart:
          if (at_start) stack.push_back(p + 1);
          break;
        case Op::kTextEnd:
          if (at_end) stack.push_back(p + 1);
          break;
        case Op::kMatch: matched = true; break;
      }
    }
    return matched;
  }
  const std::vector<int>& pcs() const { return pcs_; }

 private:
  std::vector<uint64_t> mark_;
  uint64_t generation_ = 1;
  std::vector<int> pcs_;
  std::vector<int> stack_;  // Add's work list, kept to spare an allocation per step
};

}  // namespace

bool SchemaRegex::Ranges::Contains(char32_t r) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges)
    if (r >= lo && r <= hi) {
      in = true;
      break;
    }
  return in != negated;
}

std::optional<SchemaRegex> SchemaRegex::Compile(std::string_view pattern) {
  NodePtr ast = Parser(pattern).Parse();
  if (ast == nullptr) return std::nullopt;
  SchemaRegex re;
  re.pattern_ = std::string(pattern);
  Compiler(&re.program_, &re.classes_).Emit(*ast);
  re.program_.push_back({Op::kMatch, 0, 0});
  return re;
}

bool SchemaRegex::Matches(std::string_view text) const {
  ThreadList current(program_.size()), next(program_.size());
  current.Clear();
  size_t pos = 0;
  while (true) {
    // Unanchored: a match may start here (a pattern with ^ only succeeds at 0).
    if (current.Add(program_, 0, pos == 0, pos == text.size())) return true;
    if (pos == text.size()) return false;
    char32_t rune = kReplacement;
    size_t n = DecodeUtf8(text, pos, &rune);
    if (n == 0) n = 1;
    pos += n;
    next.Clear();
    for (int pc : current.pcs()) {
      const Inst& i = program_[static_cast<size_t>(pc)];
      if (classes_[static_cast<size_t>(i.x)].Contains(rune) && next.Add(program_, pc + 1, false, pos == text.size()))
        return true;
    }
    std::swap(current, next);
  }
}

}  // namespace tfjob::api
