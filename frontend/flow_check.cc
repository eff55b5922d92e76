// The checks a flow passes when it is built (frontend/flow_check.h): its steps'
// structure, one rule per member of StructureCheck, and no flow nested in itself.

#include "frontend/flow_check.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/loop.h"
#include "ir/checked_math.h"

namespace weft::flow_detail {

std::string where(const std::source_location& loc) {
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line());
}

const Flow* as_flow(const ModulePtr& m) { return dynamic_cast<const Flow*>(m.get()); }

std::string unrepresentable(const Type& t) {
  const std::vector<int64_t>& dims = t.shape.dims;
  if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) {
    return "a dimension is negative";
  }
  return size_fits(t.dtype, dims) ? "" : "its size in bytes does not fit in 64 bits";
}

namespace {

using Kind = FlowStep::Kind;

bool is_module_step(Kind k) {
  return k == Kind::From || k == Kind::Through || k == Kind::Also || k == Kind::AlsoWith ||
         k == Kind::Fork;
}

// Checks one flow's structure (not its children's: they were checked when built): each
// step in order (what may follow a split, the step's own rule, a fork's tag, the labels
// of the flows it nests), then the whole (no split left unmerged, no label named like a
// tag). validate() runs it.
class StructureCheck {
 public:
  explicit StructureCheck(const std::vector<FlowStep>& steps) : steps_(steps) {
    collect_later_names();
  }

  Status run() {
    for (size_t i = 0; i < steps_.size(); ++i) {
      WEFT_RETURN_IF_ERROR(check_after_split(i));
      WEFT_RETURN_IF_ERROR(check_step(i));
      WEFT_RETURN_IF_ERROR(check_fork_named(i));
      WEFT_RETURN_IF_ERROR(note_nested_labels(steps_[i]));
    }
    WEFT_RETURN_IF_ERROR(check_last_merged());
    return check_label_collisions();
  }

 private:
  // Tags defined anywhere in the flow: a uses(...) of one defined later is a forward
  // reference (state carried across steps); an input declared later is an error.
  void collect_later_names() {
    for (const FlowStep& s : steps_) {
      if (s.kind == Kind::Tag) all_tags_.emplace(s.names[0], s.loc);
      if (s.kind == Kind::TagGroup) all_groups_.emplace(s.names[0], s.loc);
      if (s.kind == Kind::Input) {
        for (const std::string& n : s.names) all_inputs_.emplace(n, s.loc);
      }
    }
  }

  Kind previous(size_t i) const { return i > 0 ? steps_[i - 1].kind : Kind::From; }

  static Error never_merged(const FlowStep& split) {
    return Error{"split(...) is never merged: merge(...) must follow it (after an optional "
                 "tag_group)",
                 to_location(split.loc)};
  }

  Status define(const std::string& name, const std::source_location& loc, const char* what) {
    if (name.empty()) return Error{std::string(what) + " name must not be empty", to_location(loc)};
    if (auto it = tags_.find(name); it != tags_.end()) {
      return Error{"duplicate tag '" + name + "': already defined at " + where(it->second),
                   to_location(loc)};
    }
    tags_[name] = loc;
    return Status();
  }

  // What may follow a split (an optional tag_group, then merge).
  Status check_after_split(size_t i) const {
    const Kind prev = previous(i), kind = steps_[i].kind;
    if (i > 0 && (prev == Kind::Split || prev == Kind::TagGroup) && kind != Kind::TagGroup &&
        kind != Kind::Merge) {
      return never_merged(steps_[prev == Kind::Split ? i - 1 : i - 2]);
    }
    return Status();
  }

  // The step's own rule: where it may stand, and the names it defines.
  Status check_step(size_t i) {
    const FlowStep& s = steps_[i];
    switch (s.kind) {
      case Kind::Split:
        if (s.modules.empty()) {
          return Error{"split({}) has no branches: give it at least one module", to_location(s.loc)};
        }
        return Status();
      case Kind::TagGroup:
        if (previous(i) != Kind::Split) {
          return Error{"tag_group(\"" + s.names[0] + "\") must directly follow split(...)",
                       to_location(s.loc)};
        }
        for (size_t b = 0; b < steps_[i - 1].modules.size(); ++b) {
          WEFT_RETURN_IF_ERROR(define(s.names[0] + "." + std::to_string(b), s.loc, "tag_group"));
        }
        return Status();
      case Kind::Merge:
        if (previous(i) != Kind::Split && previous(i) != Kind::TagGroup) {
          return Error{"merge(...) without a split(...) before it", to_location(s.loc)};
        }
        return Status();
      case Kind::Tag: return define(s.names[0], s.loc, "tag");
      case Kind::Input:
        for (const std::string& n : s.names) WEFT_RETURN_IF_ERROR(define(n, s.loc, "input"));
        return Status();
      case Kind::Uses: return check_uses(i);
      case Kind::Label: return check_own_label(s);
      default: return Status();
    }
  }

  // uses(...) follows a module step (after other uses), and each name is a tag or tag
  // group defined before it or a tag defined later (a forward reference: Flow::forward).
  Status check_uses(size_t i) const {
    const FlowStep& s = steps_[i];
    size_t m = i;
    while (m > 0 && steps_[m - 1].kind == Kind::Uses) --m;
    if (m == 0 || !is_module_step(steps_[m - 1].kind)) {
      return Error{"uses(...) must follow a module: from, through, also, also_with or fork",
                   to_location(s.loc)};
    }
    const FlowStep& module = steps_[m - 1];
    const bool over = !module.modules.empty() && module.modules[0] && is_map_over(*module.modules[0]);
    for (const std::string& n : s.names) {
      if (tags_.count(n)) continue;
      std::string group;
      for (const auto& [t, unused] : tags_) {
        if (t.rfind(n + ".", 0) == 0) group += (group.empty() ? "" : ", ") + t;
      }
      // over(tag) maps over one value; a group gave the module one input per branch.
      if (!group.empty() && over) {
        return Error{"map(...).over(\"" + n + "\") names a tag_group; map over one of its tags: " + group,
                     to_location(s.loc)};
      }
      if (!group.empty()) continue;
      if (all_tags_.count(n)) continue;  // a forward reference: Flow::forward
      if (auto later = all_groups_.find(n); later != all_groups_.end()) {
        return Error{"uses(\"" + n + "\") refers to tag_group \"" + n + "\", defined later, at " +
                         where(later->second) + "; a forward reference reads one tag, not a group",
                     to_location(s.loc)};
      }
      if (auto later = all_inputs_.find(n); later != all_inputs_.end()) {
        return Error{"uses(\"" + n + "\") refers to input \"" + n + "\", declared later, at " +
                         where(later->second) + "; declare inputs before they are used",
                     to_location(s.loc)};
      }
      std::string known;
      for (const auto& [t, unused] : tags_) known += (known.empty() ? "" : ", ") + t;
      return Error{"uses of unknown tag '" + n + "'; tags defined before this call: " +
                       (known.empty() ? "(none)" : known),
                   to_location(s.loc)};
    }
    return Status();
  }

  // label(name): one per flow, not empty, no dot.
  Status check_own_label(const FlowStep& s) {
    const std::string& name = s.names[0];
    if (name.empty()) return Error{"label name must not be empty", to_location(s.loc)};
    if (name.find('.') != std::string::npos) {
      return Error{"label '" + name + "' contains a dot; dots separate the levels of a "
                   "label path (encoder.scan), so a label cannot contain one",
                   to_location(s.loc)};
    }
    if (!own_label_.empty()) {
      return Error{"flow labelled twice: '" + own_label_ + "' at " + where(own_label_loc_) +
                       ", then '" + name + "'",
                   to_location(s.loc)};
    }
    own_label_ = name;
    own_label_loc_ = s.loc;
    return Status();
  }

  // A fork's output is named by the tag after it (and its uses).
  Status check_fork_named(size_t i) const {
    const FlowStep& s = steps_[i];
    if (s.kind != Kind::Fork) return Status();
    size_t next = i + 1;
    while (next < steps_.size() && steps_[next].kind == Kind::Uses) ++next;
    if (next >= steps_.size() || steps_[next].kind != Kind::Tag) {
      return Error{"fork(" + s.modules[0]->describe() +
                       ")'s output is never named: tag(...) must follow fork(...)",
                   to_location(s.loc)};
    }
    return Status();
  }

  // Labels of nested flows, one level down. One flow instance used twice shares its
  // parameters and its label; two different flows may not share a label.
  Status note_nested_labels(const FlowStep& s) {
    for (const ModulePtr& m : s.modules) {
      const Flow* f = as_flow(m);
      if (!f || f->label().empty()) continue;
      if (auto it = labels_.find(f->label()); it != labels_.end() && it->second.second != f) {
        return Error{"duplicate label '" + f->label() + "' at one level: already used at " +
                         where(it->second.first),
                     to_location(s.loc)};
      }
      labels_.emplace(f->label(), std::make_pair(s.loc, f));
    }
    return Status();
  }

  // The last step may not leave a split (or its tag_group) unmerged.
  Status check_last_merged() const {
    if (!steps_.empty() && (steps_.back().kind == Kind::Split || steps_.back().kind == Kind::TagGroup)) {
      return never_merged(steps_[steps_.back().kind == Kind::Split ? steps_.size() - 1 : steps_.size() - 2]);
    }
    return Status();
  }

  // Tags and labels (the nested flows' and this flow's own) share one namespace.
  Status check_label_collisions() const {
    for (const auto& [label, where_and_flow] : labels_) {
      WEFT_RETURN_IF_ERROR(check_not_a_tag(label, where_and_flow.first));
    }
    if (!own_label_.empty()) return check_not_a_tag(own_label_, own_label_loc_);
    return Status();
  }

  Status check_not_a_tag(const std::string& label, const std::source_location& loc) const {
    if (auto it = tags_.find(label); it != tags_.end()) {
      return Error{"label '" + label + "' collides with the tag of that name defined at " +
                       where(it->second) + "; tags and labels share one namespace",
                   to_location(loc)};
    }
    return Status();
  }

  const std::vector<FlowStep>& steps_;
  std::map<std::string, std::source_location> tags_;  ///< Tag or input name -> where (so far).
  std::map<std::string, std::source_location> all_tags_, all_inputs_, all_groups_;  ///< The whole flow's.
  std::map<std::string, std::pair<std::source_location, const Flow*>> labels_;  ///< Nested flows'.
  std::string own_label_;
  std::source_location own_label_loc_;
};

}  // namespace

Status validate(const std::vector<FlowStep>& steps) { return StructureCheck(steps).run(); }

Status check_cycles(const Flow* f, std::vector<const Flow*>& stack) {
  for (const Flow* s : stack) {
    if (s == f) {
      return Error{"cycle: flow " + f->describe() + " contains itself"};
    }
  }
  stack.push_back(f);
  for (const FlowStep& s : f->steps()) {
    for (const ModulePtr& m : s.modules) {
      if (const Flow* child = as_flow(m)) WEFT_RETURN_IF_ERROR(check_cycles(child, stack));
    }
  }
  stack.pop_back();
  return Status();
}

}  // namespace weft::flow_detail
