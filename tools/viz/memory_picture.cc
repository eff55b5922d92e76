#include "tools/viz/memory_picture.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "ir/text_util.h"

namespace weft::viz {
namespace {

bool is_optimizer_slot(const Graph& g, ValueId v) {
  return g.value(v).name.rfind("optimizer.", 0) == 0;
}

// Fill colours by BufferKind, in enum order (colour-blind-safe Okabe-Ito hues).
constexpr std::array<const char*, kNumBufferKinds> kFill = {"#56b4e9", "#e69f00", "#009e73",
                                                            "#cc79a7"};

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, x);
  return buf;
}

std::string px(double x) { return fmt("%.1f", x); }

// A round tick spacing giving at most about `max_ticks` ticks over [0, range].
int64_t tick_step(int64_t range, int max_ticks, bool powers_of_two) {
  int64_t step = 1;
  if (powers_of_two) {
    while (range / step > max_ticks) step *= 2;
    return step;
  }
  for (int64_t base = 1;; base *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (range / (base * m) <= max_ticks) return base * m;
    }
  }
}

}  // namespace

std::string_view buffer_kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::activation: return "activation";
    case BufferKind::gradient: return "gradient";
    case BufferKind::parameter: return "parameter";
    case BufferKind::optimizer_state: return "optimizer state";
  }
  return "?";
}

std::vector<BufferKind> classify_values(const Graph& g) {
  const int num_values = g.num_values();
  const int n = static_cast<int>(g.nodes().size());
  std::vector<BufferKind> kind(num_values, BufferKind::activation);
  std::vector<bool> decided(num_values, false);
  auto decide = [&](ValueId v, BufferKind k) {
    if (!decided[v]) kind[v] = k, decided[v] = true;
  };
  for (const Input& in : g.inputs()) {
    if (in.kind == InputKind::param) decide(in.value, BufferKind::parameter);
    if (in.kind == InputKind::state) {
      decide(in.value, is_optimizer_slot(g, in.value) ? BufferKind::optimizer_state
                                                      : BufferKind::parameter);
    }
  }
  // 1. Assigned values take their target's kind.
  for (const Node& node : g.nodes()) {
    if (node.op != Op::Assign) continue;
    const ValueId target = node.operands[0], value = node.operands[1];
    const int input = g.input_index(target);
    const bool slot = input >= 0 && g.inputs()[input].kind == InputKind::state &&
                      is_optimizer_slot(g, target);
    decide(value, slot ? BufferKind::optimizer_state : BufferKind::parameter);
  }
  // 2. What the outputs need: walk back from them.
  std::vector<bool> needed(num_values, false);
  for (ValueId v : g.outputs()) needed[v] = true;
  for (int i = n - 1; i >= 0; --i) {
    const Node& node = g.node(i);
    bool any = false;
    for (ValueId r : node.results) any = any || needed[r];
    if (any) {
      for (ValueId o : node.operands) needed[o] = true;
    }
  }
  for (int v = 0; v < num_values; ++v) {
    if (needed[v]) decide(v, BufferKind::activation);
  }
  // 3. Computed from an optimizer slot: walk forward.
  std::vector<bool> from_slot(num_values, false);
  for (const Input& in : g.inputs()) from_slot[in.value] = is_optimizer_slot(g, in.value);
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Assign) continue;
    bool any = false;
    for (ValueId o : node.operands) any = any || from_slot[o];
    for (ValueId r : node.results) from_slot[r] = any;
  }
  for (int v = 0; v < num_values; ++v) {
    if (from_slot[v]) decide(v, BufferKind::optimizer_state);
  }
  // 4 and 5. Which updates each value reaches: walk back from the assigns.
  std::vector<bool> reaches_param(num_values, false), reaches_state(num_values, false);
  for (int i = n - 1; i >= 0; --i) {
    const Node& node = g.node(i);
    if (node.op == Op::Assign) {
      const int input = g.input_index(node.operands[0]);
      const bool param = input >= 0 && g.inputs()[input].kind == InputKind::param;
      (param ? reaches_param : reaches_state)[node.operands[1]] = true;
      continue;
    }
    bool to_param = false, to_state = false;
    for (ValueId r : node.results) to_param = to_param || reaches_param[r];
    for (ValueId r : node.results) to_state = to_state || reaches_state[r];
    for (ValueId o : node.operands) {
      if (to_param) reaches_param[o] = true;
      if (to_state) reaches_state[o] = true;
    }
  }
  for (int v = 0; v < num_values; ++v) {
    if (reaches_param[v]) decide(v, BufferKind::gradient);
    if (reaches_state[v]) decide(v, BufferKind::parameter);
  }
  return kind;
}

std::vector<BufferSpan> buffer_spans(const Graph& g, const MemoryPlan& plan) {
  const int n = static_cast<int>(g.nodes().size());
  const int num_values = g.num_values();
  std::vector<int> last(num_values, -1);
  for (int i = 0; i < n; ++i) {
    for (ValueId o : g.node(i).operands) last[o] = std::max(last[o], i);
  }
  for (ValueId v : g.outputs()) last[v] = n - 1;
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Assign) last[node.operands[1]] = n - 1;
  }
  // An operand taken over in place ends where its successor in the buffer begins.
  std::vector<int> taken_over_at(num_values, -1);
  for (int i : plan.in_place_nodes) {
    const Node& node = g.node(i);
    const ValueId r = node.result();
    for (ValueId o : node.operands) {
      if (o < static_cast<ValueId>(plan.offset.size()) && plan.offset[o] >= 0 &&
          plan.offset[o] == plan.offset[r] && last[o] == i && taken_over_at[o] < 0) {
        taken_over_at[o] = i;
        break;
      }
    }
  }
  const std::vector<BufferKind> kinds = classify_values(g);
  std::vector<BufferSpan> spans;
  for (int i = 0; i < n; ++i) {
    for (ValueId r : g.node(i).results) {
      if (r >= static_cast<ValueId>(plan.offset.size()) || plan.offset[r] < 0) continue;
      BufferSpan s;
      s.value = r;
      s.node = i;
      s.first_step = i;
      s.last_step = std::max(i, taken_over_at[r] >= 0 ? taken_over_at[r] - 1 : last[r]);
      s.offset = plan.offset[r];
      const int64_t a = std::max<int64_t>(plan.alignment, 1);
      s.bytes = (static_cast<int64_t>(g.type(r).bytes()) + a - 1) / a * a;
      s.kind = kinds[r];
      spans.push_back(s);
    }
  }
  return spans;
}

std::string format_bytes(int64_t bytes) {
  return weft::format_bytes(bytes, /*decimals=*/2, /*trim_zeros=*/true);
}

namespace {

// The picture's layout — the plot, the y axis (offsets) on the left, the x axis (steps)
// below, the legend on the right — and its scales.
struct Canvas {
  Canvas(const MemoryPictureOptions& options, int steps, int64_t arena)
      : width(options.width), height(options.height), steps(steps), arena(arena),
        plot_w(options.width - left - right_legend), plot_h(options.height - top - bottom) {}
  double x_of(double step) const { return left + plot_w * step / steps; }
  double y_of(double offset) const { return top + plot_h * (1.0 - offset / arena); }

  static constexpr double left = 84, top = 60, right_legend = 190, bottom = 46;
  int width, height;
  int steps;
  int64_t arena;
  double plot_w, plot_h;
};

// The svg element's opening, the background, the title and the summary line.
std::string svg_heading(const Graph& g, const MemoryPlan& plan, size_t buffers, const Canvas& c) {
  std::string out;
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"memory-plan\" width=\"" +
         std::to_string(c.width) + "\" height=\"" + std::to_string(c.height) +
         "\" viewBox=\"0 0 " + std::to_string(c.width) + " " +
         std::to_string(c.height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  out += "<text x=\"" + px(c.left) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">@" +
         html_escape(g.name()) + ": memory plan, arena " + format_bytes(plan.arena_bytes) +
         "</text>\n";
  out += "<text x=\"" + px(c.left) + "\" y=\"34\" fill=\"#555555\">" +
         std::to_string(buffers) + " buffers over " + std::to_string(c.steps) +
         " steps; naive " + format_bytes(plan.naive_bytes) + ", lower bound " +
         format_bytes(plan.lower_bound_bytes) + ", efficiency " +
         fmt("%.0f%%", 100 * plan.efficiency()) + "</text>\n";
  return out;
}

// Axes with ticks: offsets in bytes (powers of two), steps (round numbers).
std::string svg_axes(const Canvas& c) {
  const double left = c.left, top = c.top, plot_w = c.plot_w, plot_h = c.plot_h;
  std::string out = "<g class=\"axes\" stroke=\"#333333\" fill=\"#333333\">\n";
  out += "<line x1=\"" + px(left) + "\" y1=\"" + px(top) + "\" x2=\"" + px(left) + "\" y2=\"" +
         px(top + plot_h) + "\"/>\n";
  out += "<line x1=\"" + px(left) + "\" y1=\"" + px(top + plot_h) + "\" x2=\"" +
         px(left + plot_w) + "\" y2=\"" + px(top + plot_h) + "\"/>\n";
  const int64_t y_step = tick_step(c.arena, 6, /*powers_of_two=*/true);
  for (int64_t b = 0; b <= c.arena; b += y_step) {
    const double y = c.y_of(static_cast<double>(b));
    out += "<line x1=\"" + px(left - 4) + "\" y1=\"" + px(y) + "\" x2=\"" + px(left) +
           "\" y2=\"" + px(y) + "\"/><text x=\"" + px(left - 7) + "\" y=\"" + px(y + 4) +
           "\" text-anchor=\"end\" stroke=\"none\">" + format_bytes(b) + "</text>\n";
  }
  const int64_t x_step = tick_step(c.steps, 12, /*powers_of_two=*/false);
  for (int64_t t = 0; t <= c.steps; t += x_step) {
    const double x = c.x_of(static_cast<double>(t));
    out += "<line x1=\"" + px(x) + "\" y1=\"" + px(top + plot_h) + "\" x2=\"" + px(x) +
           "\" y2=\"" + px(top + plot_h + 4) + "\"/><text x=\"" + px(x) + "\" y=\"" +
           px(top + plot_h + 16) + "\" text-anchor=\"middle\" stroke=\"none\">" +
           std::to_string(t) + "</text>\n";
  }
  out += "<text x=\"" + px(left + plot_w / 2) + "\" y=\"" + px(top + plot_h + 34) +
         "\" text-anchor=\"middle\" stroke=\"none\">schedule step (node)</text>\n";
  out += "<text transform=\"translate(14 " + px(top + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" stroke=\"none\">arena offset</text>\n";
  out += "</g>\n";
  return out;
}

// One rectangle per buffer, titled with its value, op, type, kind, offset and steps.
std::string svg_buffers(const Graph& g, const std::vector<BufferSpan>& spans, const Canvas& c,
                        const MemoryPictureOptions& options) {
  std::string out = "<g class=\"buffers\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
  for (const BufferSpan& s : spans) {
    const double x0 = c.x_of(s.first_step), x1 = c.x_of(s.last_step + 1);
    const double y1 = c.y_of(static_cast<double>(s.offset));
    const double y0 = c.y_of(static_cast<double>(s.offset + s.bytes));
    const double h = std::max(1.0, y1 - y0);
    const Node& node = g.node(s.node);
    const Type& type = g.type(s.value);
    out += "<rect class=\"buffer\" x=\"" + px(x0) + "\" y=\"" + px(y1 - h) + "\" width=\"" +
           px(x1 - x0) + "\" height=\"" + px(h) + "\" fill=\"" +
           kFill[static_cast<int>(s.kind)] + "\"";
    if (options.node_links) out += " data-producer=\"" + std::to_string(s.node) + "\"";
    out += "><title>%" + html_escape(g.value(s.value).name) + " = " +
           std::string(op_name(node.op)) + " : " + type.to_string() + "\n" +
           std::string(buffer_kind_name(s.kind)) + ", offset " + std::to_string(s.offset) +
           ", " + format_bytes(s.bytes) + ", steps " + std::to_string(s.first_step) + "-" +
           std::to_string(s.last_step) + "</title></rect>\n";
  }
  out += "</g>\n";
  return out;
}

// The peak: the arena's top, and the first step where the most bytes are live.
std::string svg_peak(const Graph& g, const MemoryPlan& plan, const std::vector<BufferSpan>& spans,
                     const Canvas& c) {
  std::vector<int64_t> live(c.steps, 0);
  for (const BufferSpan& s : spans) {
    for (int t = s.first_step; t <= s.last_step && t < c.steps; ++t) live[t] += s.bytes;
  }
  const int peak_step = static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
  const int64_t peak_bytes = live[peak_step];
  const double left = c.left, top = c.top, plot_w = c.plot_w, plot_h = c.plot_h;
  const double arena_y = c.y_of(static_cast<double>(plan.arena_bytes));
  std::string out = "<g class=\"peak\" stroke=\"#d00000\" fill=\"#d00000\">\n";
  out += "<line x1=\"" + px(left) + "\" y1=\"" + px(arena_y) + "\" x2=\"" + px(left + plot_w) +
         "\" y2=\"" + px(arena_y) + "\" stroke-dasharray=\"6 3\"/>\n";
  const double peak_x = c.x_of(peak_step + 0.5);
  out += "<line x1=\"" + px(peak_x) + "\" y1=\"" + px(top) + "\" x2=\"" + px(peak_x) + "\" y2=\"" +
         px(top + plot_h) + "\" stroke-dasharray=\"2 2\"/>\n";
  const bool label_left = peak_step > c.steps / 2;
  out += "<line x1=\"" + px(peak_x) + "\" y1=\"" + px(top - 10) + "\" x2=\"" + px(peak_x) +
         "\" y2=\"" + px(top) + "\" stroke-dasharray=\"2 2\"/>\n";
  out += "<text x=\"" + px(peak_x + (label_left ? -4 : 4)) + "\" y=\"" + px(top - 3) +
         "\" text-anchor=\"" + (label_left ? "end" : "start") + "\" stroke=\"none\">peak " +
         format_bytes(peak_bytes) + " live at step " + std::to_string(peak_step) +
         (g.nodes().empty() ? "" : " (" + std::string(op_name(g.node(peak_step).op)) + ")") +
         "</text>\n";
  out += "</g>\n";
  return out;
}

// The legend: colour, kind, buffers and bytes of that kind; the peak's two lines.
std::string svg_legend(const std::vector<BufferSpan>& spans, const Canvas& c) {
  const double top = c.top;
  const double lx = c.width - c.right_legend + 16;
  std::string out = "<g class=\"legend\">\n<text x=\"" + px(lx) + "\" y=\"" + px(top + 4) +
                    "\" font-weight=\"bold\">buffer kind</text>\n";
  for (int k = 0; k < kNumBufferKinds; ++k) {
    int count = 0;
    int64_t bytes = 0;
    for (const BufferSpan& s : spans) {
      if (static_cast<int>(s.kind) == k) ++count, bytes += s.bytes;
    }
    const double y = top + 16 + 36 * k;
    out += "<rect x=\"" + px(lx) + "\" y=\"" + px(y) + "\" width=\"14\" height=\"14\" fill=\"" +
           kFill[k] + "\"/><text x=\"" + px(lx + 20) + "\" y=\"" + px(y + 11) + "\">" +
           std::string(buffer_kind_name(static_cast<BufferKind>(k))) + "</text><text x=\"" +
           px(lx + 20) + "\" y=\"" + px(y + 25) + "\" fill=\"#555555\">" + std::to_string(count) +
           " buffers, " + format_bytes(bytes) + "</text>\n";
  }
  const double ly = top + 16 + 36 * kNumBufferKinds;
  out += "<line x1=\"" + px(lx) + "\" y1=\"" + px(ly + 7) + "\" x2=\"" + px(lx + 14) + "\" y2=\"" +
         px(ly + 7) + "\" stroke=\"#d00000\" stroke-dasharray=\"6 3\"/><text x=\"" +
         px(lx + 20) + "\" y=\"" + px(ly + 11) + "\">arena top</text>\n";
  out += "<line x1=\"" + px(lx + 7) + "\" y1=\"" + px(ly + 20) + "\" x2=\"" + px(lx + 7) +
         "\" y2=\"" + px(ly + 34) + "\" stroke=\"#d00000\" stroke-dasharray=\"2 2\"/><text x=\"" +
         px(lx + 20) + "\" y=\"" + px(ly + 31) + "\">peak of live bytes</text>\n";
  out += "</g>\n";
  return out;
}

}  // namespace

std::string memory_plan_svg(const Graph& g, const MemoryPlan& plan,
                            const MemoryPictureOptions& options) {
  const std::vector<BufferSpan> spans = buffer_spans(g, plan);
  const Canvas c(options, std::max<int>(1, static_cast<int>(g.nodes().size())),
                 std::max<int64_t>(plan.arena_bytes, 1));
  return svg_heading(g, plan, spans.size(), c) + svg_axes(c) + svg_buffers(g, spans, c, options) +
         svg_peak(g, plan, spans, c) + svg_legend(spans, c) + "</svg>\n";
}

}  // namespace weft::viz
