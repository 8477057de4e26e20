#include "kube/resource_path.h"

#include <cctype>

namespace tfjob::kube {

std::string UrlEncode(const std::string& value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ApiGroupPath(const std::string& group) {
  return "/apis/" + group;
}

std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string path = gvr.group.empty() ? "/api/" + gvr.version : "/apis/" + gvr.group + "/" + gvr.version;
  if (!ns.empty()) path += "/namespaces/" + ns;
  path += "/" + gvr.resource;
  if (!name.empty()) path += "/" + name;
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string ListQuery(const ListOptions& o) {
  std::string q;
  auto add = [&q](const char* k, const std::string& v) {
    q += q.empty() ? "?" : "&";
    q += k;
    q += "=";
    q += UrlEncode(v);
  };
  if (!o.label_selector.empty()) add("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) add("fieldSelector", o.field_selector);
  if (!o.resource_version.empty()) add("resourceVersion", o.resource_version);
  if (!o.continue_token.empty()) add("continue", o.continue_token);
  if (o.limit > 0) add("limit", std::to_string(o.limit));
  if (o.watch) add("watch", "true");
  if (o.allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  if (o.timeout) add("timeoutSeconds", std::to_string(o.timeout->count()));
  return q;
}

}  // namespace tfjob::kube
