#pragma once
// The viewer page's inline stylesheet and script (viz.h), kept apart from the C++ that
// writes the page. The script reads the `#weft-data` JSON block and the SVG's
// `data-node` / `data-input` / `data-cluster` / `data-from` / `data-to` attributes; it
// loads nothing and sets `document.body.dataset.ready = "1"` when it has run.

namespace weft::viz {

extern const char* const kViewerCss;
extern const char* const kViewerJs;

}  // namespace weft::viz
