#include "tools/viz/viewer_assets.h"

namespace weft::viz {

const char* const kViewerCss = R"CSS(
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { display: flex; flex-direction: column; font: 13px/1.4 system-ui, sans-serif;
       color: #1d1d1f; background: #fafafa; }
header { padding: 8px 14px; background: #2b2540; color: #fff; display: flex;
         align-items: baseline; gap: 14px; }
header h1 { font-size: 16px; margin: 0; font-family: monospace; }
header #summary { color: #cfc8ee; }
nav { display: flex; align-items: center; gap: 6px; padding: 6px 14px;
      border-bottom: 1px solid #ddd; background: #fff; }
nav .tools { margin-left: auto; display: flex; gap: 4px; }
button { font: inherit; border: 1px solid #bbb; background: #f4f4f4; border-radius: 4px;
         padding: 2px 9px; cursor: pointer; }
button.tab.active { background: #2b2540; color: #fff; border-color: #2b2540; }
#search { font: inherit; padding: 2px 6px; width: 170px; }
main { flex: 1; display: flex; min-height: 0; }
.view { flex: 1; overflow: auto; background: #fff; }
.view[hidden] { display: none; }
#graph svg { display: block; }
#memory { padding: 10px; }
#plan-report { margin: 0 10px 10px; color: #444; }
aside#details { width: 360px; overflow: auto; padding: 10px 14px; border-left: 1px solid #ddd;
                background: #fcfcff; }
aside h2 { font-size: 15px; margin: 0 0 4px; font-family: monospace; }
aside h3 { font-size: 12px; margin: 10px 0 2px; color: #555; text-transform: uppercase;
           letter-spacing: .04em; }
aside table { border-collapse: collapse; width: 100%; }
aside td { padding: 1px 4px 1px 0; vertical-align: top; font-family: monospace; font-size: 12px; }
aside td.k { color: #666; font-family: inherit; white-space: nowrap; }
aside pre { background: #f3f1fa; padding: 6px; font-size: 11px; overflow-x: auto; }
aside a { color: #4b3bb0; cursor: pointer; text-decoration: underline; }
.hint { color: #777; }
.pill { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11px;
        background: #eee; margin-left: 4px; }
#legend { padding: 4px 14px; border-top: 1px solid #ddd; background: #fff; display: flex;
          gap: 16px; color: #444; }
#legend i { display: inline-block; width: 12px; height: 12px; border: 1px solid #999;
            margin-right: 5px; vertical-align: -2px; }
#legend i.fused-key { border: 3px double #c05a00; }
#legend .dtype-legend { display: flex; gap: 10px; margin-left: auto; }
#legend .dtype-key i { height: 4px; vertical-align: 3px; border: none; }
g.node, g.input, g.output { cursor: pointer; }
g.node:hover polygon, g.node:hover path, g.input:hover ellipse { stroke: #4b3bb0; stroke-width: 2; }
g.selected polygon, g.selected path, g.selected ellipse { stroke: #e00000 !important; stroke-width: 3 !important; }
g.match polygon, g.match path, g.match ellipse { stroke: #ff9800; stroke-width: 3; }
g.edge.lit path { stroke: #e00000; stroke-width: 2; }
g.edge.lit polygon { stroke: #e00000; fill: #e00000; }
g.cluster > text { cursor: pointer; font-weight: bold; }
g.cluster.collapsed > polygon, g.cluster.collapsed > path { fill: #dcd6f7; }
.folded { visibility: hidden; }
rect.buffer { cursor: pointer; }
rect.buffer:hover { stroke: #000; stroke-width: 1.5; }
)CSS";

const char* const kViewerJs = R"JS(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('weft-data').textContent);
  const graphSvg = document.querySelector('#graph svg');
  const details = document.getElementById('details');
  const nodeEls = new Map(), inputEls = new Map(), clusterEls = new Map();
  document.querySelectorAll('#graph g[data-node]').forEach(g => nodeEls.set(+g.dataset.node, g));
  document.querySelectorAll('#graph g[data-input]').forEach(g => inputEls.set(+g.dataset.input, g));
  document.querySelectorAll('#graph g[data-cluster]').forEach(g => clusterEls.set(+g.dataset.cluster, g));
  const edges = Array.from(document.querySelectorAll('#graph g.edge'));

  // ---- Tabs --------------------------------------------------------------------------
  document.querySelectorAll('button.tab').forEach(b => b.addEventListener('click', () => showTab(b.dataset.tab)));
  function showTab(name) {
    document.querySelectorAll('button.tab').forEach(b => b.classList.toggle('active', b.dataset.tab === name));
    document.querySelectorAll('.view').forEach(v => { v.hidden = v.id !== name + '-view'; });
  }

  // ---- Zoom --------------------------------------------------------------------------
  const box = graphSvg.viewBox.baseVal;
  let scale = 1;
  function zoom(s) {
    scale = Math.max(0.05, Math.min(4, s));
    graphSvg.setAttribute('width', (box.width * scale).toFixed(1));
    graphSvg.setAttribute('height', (box.height * scale).toFixed(1));
  }
  function fitScale() {
    return Math.min(1.25, (document.getElementById('graph-view').clientWidth - 8) / box.width);
  }
  function fit() { zoom(fitScale()); }
  document.getElementById('zoom-in').onclick = () => zoom(scale * 1.25);
  document.getElementById('zoom-out').onclick = () => zoom(scale / 1.25);
  document.getElementById('zoom-fit').onclick = fit;
  document.getElementById('graph-view').addEventListener('wheel', e => {
    if (!e.ctrlKey) return;
    e.preventDefault();
    zoom(scale * (e.deltaY < 0 ? 1.1 : 1 / 1.1));
  }, { passive: false });
  // Start at the width of the window, but never so small that labels cannot be read
  // (a training step is wide): scroll, or press `fit`, to see all of it.
  zoom(Math.max(fitScale(), 0.6));

  // ---- Details -----------------------------------------------------------------------
  const esc = s => String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const row = (k, v) => '<tr><td class="k">' + esc(k) + '</td><td>' + v + '</td></tr>';
  function bytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1048576).toFixed(2) + ' MiB';
  }
  function clusterPath(k) {
    const names = [];
    for (; k >= 0; k = data.clusters[k].parent) names.unshift(data.clusters[k].name);
    return names.join(' › ');
  }
  // Which element defines a value, by name: for links from operands to producers.
  const producer = new Map();
  data.inputs.forEach((inp, i) => producer.set(inp.value.name, 'in' + i));
  data.nodes.forEach((n, i) => n.results.forEach(r => producer.set(r.name, 'n' + i)));
  function valueRows(v) {
    let html = row('type', esc(v.type)) + row('kind', esc(v.kind));
    if (v.tag) html += row('tag', '#' + esc(v.tag));
    if (v.offset !== undefined) {
      html += row('buffer', 'arena offset ' + v.offset + ', ' + v.bytes + ' bytes' +
                  (v.reserved !== v.bytes ? ' (' + v.reserved + ' reserved)' : '') +
                  ' <span class="pill">' + bytes(v.bytes) + '</span>');
    } else if (v.placement) {
      html += row('buffer', esc(v.placement));
    }
    return html;
  }
  function valueLink(v) {
    const p = producer.get(v.name);
    return p ? '<a data-go="' + p + '">' + esc(v.name) + '</a>' : esc(v.name);
  }
  function showNode(i) {
    const n = data.nodes[i];
    let html = '<h2>' + esc(n.op) + (n.fused ? ' <span class="pill">' + esc(n.fused.kind) + '</span>' : '') + '</h2>';
    html += '<div class="hint">node ' + i + (n.cluster >= 0 ? ' · in ' + esc(clusterPath(n.cluster)) : '') + '</div>';
    n.results.forEach(r => { html += '<h3>result ' + esc(r.name) + '</h3><table>' + valueRows(r) + '</table>'; });
    if (n.attrs.length) {
      html += '<h3>attributes</h3><table>';
      n.attrs.forEach(a => { html += row(a[0], esc(a[1])); });
      html += '</table>';
    }
    if (n.operands.length) {
      html += '<h3>operands</h3><table>';
      n.operands.forEach((o, k) => { html += row(k, valueLink(o) + ' : ' + esc(o.type)); });
      html += '</table>';
    }
    html += '<h3>source</h3><table>' + row('location', esc(n.loc || 'unknown')) +
            (n.path ? row('builder path', esc(n.path)) : '') + '</table>';
    if (n.fused) html += '<h3>fused body (' + n.fused.ops + ' ops)</h3><pre>' + esc(n.fused.body) + '</pre>';
    details.innerHTML = html;
  }
  function showInput(i) {
    const inp = data.inputs[i];
    details.innerHTML = '<h2>' + esc(inp.value.name) + '</h2><div class="hint">graph input ' + i +
      ' <span class="pill">' + esc(inp.input_kind) + '</span></div><table>' + valueRows(inp.value) +
      row('location', esc(inp.loc || 'unknown')) + '</table>';
  }
  details.addEventListener('click', e => {
    const go = e.target.dataset && e.target.dataset.go;
    if (go) select(go, true);
  });

  let selected = null;
  function show(id) {
    if (id.startsWith('in')) showInput(+id.slice(2)); else if (id.startsWith('n')) showNode(+id.slice(1));
  }
  function select(id, scroll) {
    document.querySelectorAll('#graph .selected').forEach(g => g.classList.remove('selected'));
    edges.forEach(e => e.classList.remove('lit'));
    selected = id;
    const el = document.getElementById(id);
    if (!el) return;
    el.classList.add('selected');
    edges.forEach(e => { if (e.dataset.from === id || e.dataset.to === id) e.classList.add('lit'); });
    show(id);
    if (scroll) {
      showTab('graph');
      el.scrollIntoView({ block: 'center', inline: 'center' });
    }
  }
  function hookup(el, id) {
    el.addEventListener('mouseenter', () => { if (!selected) show(id); });
    el.addEventListener('click', e => { e.stopPropagation(); if (selected === id) { selected = null; el.classList.remove('selected'); } else select(id, false); });
  }
  nodeEls.forEach((el, i) => hookup(el, 'n' + i));
  inputEls.forEach((el, i) => hookup(el, 'in' + i));
  document.querySelectorAll('#memory rect[data-producer]').forEach(r => {
    r.addEventListener('mouseenter', () => { if (!selected) showNode(+r.dataset.producer); });
    r.addEventListener('click', () => select('n' + r.dataset.producer, true));
  });

  // ---- Clusters: collapse hides what is inside and greys the frame ------------------
  const collapsed = new Set();
  function inside(k, c) {  // is cluster k inside (or equal to) cluster c?
    for (; k >= 0; k = data.clusters[k].parent) if (k === c) return true;
    return false;
  }
  function folded(k) {
    for (const c of collapsed) if (k >= 0 && inside(k, c)) return true;
    return false;
  }
  function refold() {
    const hidden = new Set();
    nodeEls.forEach((el, i) => {
      const h = folded(data.nodes[i].cluster);
      el.classList.toggle('folded', h);
      if (h) hidden.add('n' + i);
    });
    clusterEls.forEach((el, k) => {
      const parent = data.clusters[k].parent;
      el.classList.toggle('folded', parent >= 0 && folded(parent));
      el.classList.toggle('collapsed', collapsed.has(k));
      const label = el.querySelector(':scope > text');
      if (label) label.textContent = (collapsed.has(k) ? '▸ ' : '') + data.clusters[k].name;
    });
    edges.forEach(e => e.classList.toggle('folded', hidden.has(e.dataset.from) && hidden.has(e.dataset.to)));
  }
  clusterEls.forEach((el, k) => {
    const label = el.querySelector(':scope > text');
    if (label) label.addEventListener('click', () => { collapsed.has(k) ? collapsed.delete(k) : collapsed.add(k); refold(); });
  });
  const collapseAll = document.getElementById('collapse-all');
  if (collapseAll) {
    collapseAll.onclick = () => { data.clusters.forEach((c, k) => { if (c.parent < 0) collapsed.add(k); }); refold(); };
    document.getElementById('expand-all').onclick = () => { collapsed.clear(); refold(); };
  }

  // ---- Search ------------------------------------------------------------------------
  document.getElementById('search').addEventListener('input', e => {
    const q = e.target.value.trim().toLowerCase();
    let first = null;
    nodeEls.forEach((el, i) => {
      const n = data.nodes[i];
      const hit = q !== '' && (n.op.includes(q) || n.results.some(r => r.name.toLowerCase().includes(q)));
      el.classList.toggle('match', hit);
      if (hit && !first) first = el;
    });
    inputEls.forEach((el, i) => {
      const hit = q !== '' && data.inputs[i].value.name.toLowerCase().includes(q);
      el.classList.toggle('match', hit);
      if (hit && !first) first = el;
    });
    if (first) first.scrollIntoView({ block: 'center', inline: 'center' });
  });

  // A link may open the page on a node (`model.html#n12`, `#in0`) or on the memory tab.
  const hash = location.hash.slice(1);
  if (/^(n|in)[0-9]+$/.test(hash)) select(hash, true);
  else if (hash === 'memory' && document.getElementById('memory-view')) showTab('memory');

  document.body.dataset.ready = '1';
})();
)JS";

}  // namespace weft::viz
