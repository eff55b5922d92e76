#include "ir/window.h"

#include <string>

namespace weft {

StatusOr<IntList> spatial_attr(const Node& node, std::string_view name, int spatial,
                               int64_t fill) {
  if (!node.has_attr(name)) return IntList(static_cast<size_t>(spatial), fill);
  const IntList& list = node.ints_attr(name);
  if (static_cast<int>(list.size()) == spatial) return list;
  return Error{std::string(name) + " " + attribute_to_string(list) + " must have " +
               std::to_string(spatial) + (spatial == 1 ? " entry" : " entries") +
               ", one per spatial dim"};
}

StatusOr<ConvAttrs> conv_attrs(const Node& node, int spatial) {
  ConvAttrs a;
  WEFT_ASSIGN_OR_RETURN(a.stride, spatial_attr(node, "stride", spatial, 1));
  WEFT_ASSIGN_OR_RETURN(a.padding, spatial_attr(node, "padding", spatial, 0));
  WEFT_ASSIGN_OR_RETURN(a.dilation, spatial_attr(node, "dilation", spatial, 1));
  return a;
}

}  // namespace weft
