#include "kube/watch_decoder.h"

#include <algorithm>

#include "api/json_fields.h"

#include "kube/api_error.h"

namespace tfjob::kube {

namespace {

// A forward scanner of JSON text that finds where values begin and end without building them.
// It checks only what it needs to find the ends (quotes, escapes, nesting); anything it does not
// expect makes it fail, and the caller then leaves the text as it was.
class Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}
  size_t pos() const { return pos_; }
  void SkipSpace() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  // Skips whitespace, then eats `c` if it is next.
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  // A string at the position (after whitespace): its raw text between the quotes, escapes not
  // decoded. nullopt when none is there or it does not end.
  std::optional<std::string_view> String() {
    SkipSpace();
    if (pos_ >= t_.size() || t_[pos_] != '"') return std::nullopt;
    size_t begin = pos_ + 1;
    size_t end = StringEnd(begin);
    if (end == std::string_view::npos) return std::nullopt;
    pos_ = end + 1;
    return t_.substr(begin, end - begin);
  }
  // The next character after whitespace (NUL at the end).
  char Peek() {
    SkipSpace();
    return pos_ < t_.size() ? t_[pos_] : '\0';
  }
  // Skips one value (after whitespace). False when the text ends or the nesting does not match.
  bool SkipValue() {
    SkipSpace();
    if (pos_ >= t_.size()) return false;
    char c = t_[pos_];
    if (c == '"') return String().has_value();
    if (c == '{' || c == '[') return SkipNested();
    return SkipScalar();
  }

 private:
  // A number, true, false or null: up to the next delimiter.
  bool SkipScalar() {
    size_t begin = pos_;
    while (pos_ < t_.size() && std::string_view(",}] \t\n\r").find(t_[pos_]) == std::string_view::npos) ++pos_;
    return pos_ > begin;
  }
  // An object or array at the position, up to the bracket that closes it.
  bool SkipNested() {
    std::string open;  // the brackets not yet closed
    while (pos_ < t_.size()) {
      char c = t_[pos_];
      if (c == '"') {
        size_t end = StringEnd(pos_ + 1);
        if (end == std::string_view::npos) return false;
        pos_ = end + 1;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        open.push_back(c);
      } else if (c == '}' || c == ']') {
        if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return false;
        open.pop_back();
        if (open.empty()) return true;
      }
    }
    return false;
  }

  // The position of the quote that ends the string whose text begins at `i`, or npos.
  size_t StringEnd(size_t i) const {
    for (;;) {
      size_t q = t_.find('"', i);
      if (q == std::string_view::npos) return q;
      size_t backslashes = 0;
      while (q - backslashes > i && t_[q - backslashes - 1] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return q;
      i = q + 1;
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
};

// A part of a line replaced by other text.
struct Cut {
  size_t begin = 0, end = 0;
  std::string with;
};

bool PlainKey(const std::optional<std::string_view>& key) {
  return key && key->find('\\') == std::string_view::npos;
}

// At the object the scanner is at (after whitespace): the cut that replaces it with only its
// members named in `prune.keep`. nullopt when the scanner cannot follow the object.
std::optional<Cut> KeepMembers(Scanner& s, std::string_view line, const WatchPrune& prune) {
  Cut cut{.begin = s.pos(), .with = "{"};
  if (!s.Eat('{')) return std::nullopt;
  if (!s.Eat('}')) {
    for (;;) {
      s.SkipSpace();
      size_t member = s.pos();
      auto name = s.String();
      if (!PlainKey(name) || !s.Eat(':') || !s.SkipValue()) return std::nullopt;
      if (std::find(prune.keep.begin(), prune.keep.end(), *name) != prune.keep.end()) {
        if (cut.with.size() > 1) cut.with += ',';
        cut.with.append(line.substr(member, s.pos() - member));
      }
      if (s.Eat(',')) continue;
      if (s.Eat('}')) break;
      return std::nullopt;
    }
  }
  cut.with += '}';
  cut.end = s.pos();
  return cut;
}

// At the object the scanner is at (after whitespace): a cut for each member named
// `prune.field` whose value is an object, keeping of it only the members named in `prune.keep`.
// False when the scanner cannot follow the object (an escaped key among those it reads, too).
bool CutField(Scanner& s, std::string_view line, const WatchPrune& prune, std::vector<Cut>& cuts) {
  if (!s.Eat('{')) return false;
  if (s.Eat('}')) return true;
  for (;;) {
    auto key = s.String();
    if (!PlainKey(key) || !s.Eat(':')) return false;
    s.SkipSpace();
    if (*key == prune.field && s.Peek() == '{') {
      auto cut = KeepMembers(s, line, prune);
      if (!cut) return false;
      cuts.push_back(std::move(*cut));
    } else if (!s.SkipValue()) {
      return false;
    }
    if (s.Eat(',')) continue;
    return s.Eat('}');
  }
}

StatusOr<WatchEvent> DecodeLine(std::string_view line, const WatchPrune& prune) {
  std::optional<std::string> pruned;
  if (!prune.empty()) pruned = PruneEventText(line, prune);
  if (pruned) line = *pruned;
  try {
    auto j = nlohmann::json::parse(line);
    std::string type = api::StringField(j, "type");
    WatchEvent e;
    if (type == "ADDED")
      e.type = WatchEventType::kAdded;
    else if (type == "MODIFIED")
      e.type = WatchEventType::kModified;
    else if (type == "DELETED")
      e.type = WatchEventType::kDeleted;
    else if (type == "BOOKMARK")
      e.type = WatchEventType::kBookmark;
    else if (type == "ERROR")
      e.type = WatchEventType::kError;
    else
      return DataLossError("undecodable watch event: unknown event type \"" + type.substr(0, 64) + "\"");
    if (!j.contains("object") || !j["object"].is_object())
      return DataLossError("undecodable watch event: event without an object");
    e.object = std::move(j["object"]);
    return e;
  } catch (const std::exception& ex) {
    return DataLossError(std::string("undecodable watch event: ") + ex.what());
  }
}

}  // namespace

std::optional<std::string> PruneEventText(std::string_view line, const WatchPrune& prune) {
  if (prune.empty()) return std::nullopt;
  Scanner s(line);
  std::vector<Cut> cuts;
  if (!s.Eat('{')) return std::nullopt;
  if (!s.Eat('}')) {
    for (;;) {
      auto key = s.String();
      if (!PlainKey(key) || !s.Eat(':')) return std::nullopt;
      s.SkipSpace();
      if (*key == "object" && s.Peek() == '{') {
        if (!CutField(s, line, prune, cuts)) return std::nullopt;
      } else if (!s.SkipValue()) {
        return std::nullopt;
      }
      if (s.Eat(',')) continue;
      if (s.Eat('}')) break;
      return std::nullopt;
    }
  }
  if (cuts.empty()) return std::nullopt;
  std::string out;
  size_t at = 0;
  for (const Cut& c : cuts) {
    out.append(line.substr(at, c.begin - at));
    out.append(c.with);
    at = c.end;
  }
  out.append(line.substr(at));
  return out;
}

std::vector<WatchEvent> WatchDecoder::Feed(std::string_view chunk, std::vector<Status>* errors) {
  std::vector<WatchEvent> events;
  auto too_long = [&] {
    if (errors != nullptr)
      errors->push_back(
          DataLossError("watch event longer than the limit of " + std::to_string(max_event_bytes_) + " bytes"));
  };
  auto line_done = [&](std::string_view line) {
    if (line.size() > max_event_bytes_) return too_long();
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) return;
    StatusOr<WatchEvent> e = DecodeLine(line, prune_);
    if (e.ok())
      events.push_back(std::move(e).value());
    else if (errors != nullptr)
      errors->push_back(e.status());
  };
  if (broken_) return events;
  // Only the new bytes are searched: the buffer never holds a newline, so a long line costs
  // linear time however finely it is split.
  size_t start = 0;
  for (;;) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) break;
    std::string_view piece = chunk.substr(start, nl - start);
    start = nl + 1;
    if (buffer_.empty()) {
      line_done(piece);
    } else {
      if (buffer_.size() + piece.size() > max_event_bytes_) {
        buffer_.clear();
        too_long();
        continue;
      }
      buffer_.append(piece);
      std::string line = std::move(buffer_);
      buffer_.clear();
      line_done(line);
    }
  }
  std::string_view rest = chunk.substr(start);
  if (buffer_.size() + rest.size() > max_event_bytes_) {
    std::string().swap(buffer_);
    broken_ = true;
    too_long();
    return events;
  }
  buffer_.append(rest);
  return events;
}

Status WatchErrorStatus(const nlohmann::json& s) {
  long code = s.is_object() && s.contains("code") && s["code"].is_number_integer() ? s["code"].get<long>() : 500;
  return StatusFromHttp(code, s.dump());
}

}  // namespace tfjob::kube
