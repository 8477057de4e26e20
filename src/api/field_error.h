#pragma once
// FieldError: one problem with one field of an object, rendered exactly as Kubernetes'
// k8s.io/apimachinery/pkg/util/validation/field.Error does
// ("spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified"),
// so that users see the messages they know from the upstream webhook.

#include <string>
#include <string_view>
#include <vector>

namespace tfjob::api {

enum class FieldErrorType {
  kRequired,      // "Required value"
  kInvalid,       // "Invalid value: <value>"
  kNotSupported,  // "Unsupported value: <value>: supported values: ..."
  kForbidden,     // "Forbidden"
  kDuplicate,     // "Duplicate value: <value>"
};

struct FieldError {
  FieldErrorType type = FieldErrorType::kInvalid;
  std::string field;  // "spec.tfReplicaSpecs[Worker].replicas"
  // The bad value already rendered as Go's %#v would for strings ("\"00test\"") or %v for
  // numbers ("-1"); empty when the type has no value (Required, Forbidden).
  std::string value;
  std::string detail;

  std::string ToString() const;
  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrors = std::vector<FieldError>;

// Decodes one UTF-8 sequence at s[i] as Go and nlohmann::json do (no overlong forms, no
// surrogates, at most U+10FFFF): its length, with the code point in *rune; 0 when s[i] does not
// start a valid sequence. REQUIRES: i < s.size().
size_t DecodeUtf8(std::string_view s, size_t i, char32_t* rune);

// Go-quoted string value, as Go's %q (strconv.Quote) writes it: "abc" with \" and \\ escaped,
// \a \b \f \n \r \t \v, other control characters and DEL as \x1b, bytes that are not UTF-8 as
// \xff, and the invisible characters that can disguise a message (C1 controls, non-ASCII spaces,
// line and paragraph separators, bidi overrides U+202A-U+202E and isolates U+2066-U+2069,
// zero-width and other format characters, noncharacters, private use) as \u202e / \U000e0001.
// Ordinary text, including printable non-ASCII, is unchanged.
std::string QuoteValue(const std::string& s);

// The same escapes without the quotes and without escaping '"' and '\\': for text that is not a
// Go-quoted value (field paths, names in messages), so that no input byte can reach a terminal
// as a control sequence. Idempotent; ordinary text is unchanged.
std::string EscapeNonPrintable(std::string_view s);

FieldError Required(std::string field, std::string detail);
FieldError Invalid(std::string field, std::string value, std::string detail);
FieldError NotSupported(std::string field, std::string value, const std::vector<std::string>& supported);
FieldError Forbidden(std::string field, std::string detail);
FieldError Duplicate(std::string field, std::string value);

// utilerrors.NewAggregate(...).Error(): one error as is, several as "[e1, e2]".
std::string AggregateMessage(const FieldErrors& errors);

}  // namespace tfjob::api
