// PrecisionTool report, 1 of 5: the helpers and the page's data (report/data.py: column arrays,
// names front-coded). The files are concatenated into the page's one script in the order
// page.py's SCRIPTS gives; each adds its part to window.PrecisionToolReport. Every word, state
// and colour comes from the data, which the verdict wrote; nothing is judged here. Text from
// the data is only ever set with textContent, never parsed as HTML.
(function (PT) {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function fmt(v) {
    if (v === null || v === undefined) { return "NaN"; }
    return Math.abs(v) < 1e-4 && v !== 0 ? v.toPrecision(6) : v.toFixed(6);
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (cls) { node.className = cls; }
    return node;
  }

  function svgEl(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    for (var key in attrs) { node.setAttribute(key, attrs[key]); }
    return node;
  }

  function niceTicks(lo, hi, count) {
    var raw = (hi - lo) / count, step = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = [1, 2, 2.5, 5, 10].filter(function (k) { return step * k >= raw; })[0];
    step *= m;
    var out = [];
    for (var t = Math.ceil(lo / step - 1e-9); t <= Math.floor(hi / step + 1e-9); t++) { out.push(Math.round(t * step)); }
    return out;
  }

  function cosSpans(td, list, states) {
    if (!list.length) { td.textContent = "none compared"; return; }
    list.forEach(function (pair, j) { td.appendChild(el("span", pair[0] + ": " + fmt(pair[1]), states[j])); });
  }

  // --- the data -------------------------------------------------------------------------

  function Data(raw) {
    this.raw = raw;
    var names = [], previous = "", i;
    for (i = 1; i < raw.pos.length; i++) { raw.pos[i] += raw.pos[i - 1]; raw.index[i] += raw.index[i - 1]; }
    for (i = 0; i < raw.pos.length; i++) {
      previous = previous.slice(0, raw.shared[i]) + raw.rest[i];
      names.push(previous);
    }
    this.names = names;
    this.at = {};  // position -> index into the columns
    for (var k = 0; k < raw.pos.length; k++) { this.at[raw.pos[k]] = k; }
    this.byName = {};
    for (var n = 0; n < names.length; n++) { this.byName[names[n]] = raw.pos[n]; }
  }

  // [GroundTruth, input cosines, output cosines, their classes, worst metrics, evidence, cause]
  Data.prototype.full = function (pos, name) {
    var f = this.raw.full[String(pos)], raw = this.raw;
    if (!f) { return null; }
    var css = function (codes) { return codes.map(function (c) { return raw.css[c]; }); };
    return [f[0] === -1 ? name : raw.texts[f[0]], f[1], f[2], css(f[3]), css(f[4]), f[5],
            raw.texts[f[6]], raw.texts[f[7]]];
  };

  // the op at position ``pos`` (null when it has no compared output); ``bare``: without its full
  // metrics (a filter or a sort over 30,000 ops asks only for names and values)
  Data.prototype.op = function (pos, bare) {
    var raw = this.raw, i = this.at[pos];
    if (i === undefined) { return null; }
    var state = raw.state[i], name = this.names[i];
    return {pos: pos, i: i, index: raw.index[i], name: name, type: raw.types[raw.type[i]],
            state: raw.states[state], marked: raw.marked[state], css: raw.css[state],
            shape: raw.shape[state], quiet: raw.quiet[state],
            cos: raw.cos[i], red: raw.redv[i], full: bare ? null : this.full(pos, name)};
  };

  // the first index into the columns at or after position ``pos`` (columns are in position order)
  Data.prototype.from = function (pos) {
    var p = this.raw.pos, lo = 0, hi = p.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (p[mid] < pos) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  };

  PT.SVG = SVG;
  PT.fmt = fmt;
  PT.el = el;
  PT.svgEl = svgEl;
  PT.niceTicks = niceTicks;
  PT.cosSpans = cosSpans;
  PT.Data = Data;
})(window.PrecisionToolReport = window.PrecisionToolReport || {});
