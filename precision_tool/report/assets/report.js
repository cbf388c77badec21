// PrecisionTool report: the curve (hover, pin, zoom, pan, keys), the flagged table (rendered a few
// hundred rows at a time, introducers first with their inheritors folded, filter and sort), and
// the subgraph (centred on its op, zoom and pan). Every word, state and colour comes from the
// page's data, which the verdict wrote (report/data.py); nothing is judged here. Text from the
// data is only ever set with textContent, never parsed as HTML.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var ALL_MARKS = 3000, FLAGGED_MARKS = 500;  // in the window shown: plot.py's MAX_MARKERS, MAX_FLAGGED_MARKS

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

  // --- the data -------------------------------------------------------------------------

  function Data(raw) {
    this.raw = raw;
    var names = [], previous = "";
    for (var i = 0; i < raw.pos.length; i++) {
      previous = previous.slice(0, raw.shared[i]) + raw.rest[i];
      names.push(previous);
    }
    this.names = names;
    this.at = {};  // position -> index into the columns
    for (var k = 0; k < raw.pos.length; k++) { this.at[raw.pos[k]] = k; }
    this.byName = {};
    for (var n = 0; n < names.length; n++) { this.byName[names[n]] = raw.pos[n]; }
  }

  Data.prototype.op = function (pos) {
    var raw = this.raw, i = this.at[pos];
    if (i === undefined) { return null; }
    var state = raw.state[i], full = raw.full[String(pos)] || null;
    return {pos: pos, i: i, index: raw.index[i], name: this.names[i], type: raw.types[raw.type[i]],
            state: raw.states[state], marked: raw.marked[state], css: raw.css[state],
            cos: raw.cos[i], red: raw.redv[i], full: full};
  };

  // the first index into the columns at or after position ``pos`` (columns are in position order)
  Data.prototype.from = function (pos) {
    var p = this.raw.pos, lo = 0, hi = p.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (p[mid] < pos) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  };

  // --- the curve ------------------------------------------------------------------------

  function Plot(section) {
    this.s = section;
    var svg = this.svg = document.getElementById("plot-" + section.id);
    var d = svg.dataset;
    this.left = +d.left; this.right = +d.right;
    this.full = [+d.lo, +d.hi];
    this.win = [+d.lo, +d.hi];
    this.cos = {top: +d.cosTop, height: +d.cosHeight, lo: section.data.raw.cosAxis[0], hi: section.data.raw.cosAxis[1]};
    this.red = {top: +d.redTop, height: +d.redHeight, lo: section.data.raw.redAxis[0], hi: section.data.raw.redAxis[1]};
    this.series = svg.querySelector("g.series");
    this.xticks = svg.querySelector("g.xticks");
    this.windowRect = svg.querySelector("g.overview rect.window");
  }

  Plot.prototype.x = function (pos, win) {
    win = win || this.win;
    return this.left + (pos - win[0]) / Math.max(win[1] - win[0], 1) * (this.right - this.left);
  };

  Plot.prototype.posAt = function (x) {  // the inverse of x over the window
    var w = this.win;
    return w[0] + (x - this.left) / (this.right - this.left) * Math.max(w[1] - w[0], 1);
  };

  function axisY(axis, value, log) {
    var v = value;
    if (log) { if (value <= 0) { return axis.top + axis.height; } v = Math.log10(value); }
    v = Math.min(Math.max(v, axis.lo), axis.hi);
    return axis.top + (1 - (v - axis.lo) / (axis.hi - axis.lo)) * axis.height;
  }

  Plot.prototype.mark = function (name, op, x, y) {
    var cls = "pt " + name + " " + op.css, data = {"data-pos": op.pos, "data-state": op.state};
    var cx = x.toFixed(2), cy = y.toFixed(2);
    if (name === "red" && op.red <= 0) { cls += " zero"; }
    data["class"] = cls;
    if (op.state === "introduces") {
      data.d = "M" + cx + "," + (y - 4.5).toFixed(2) + " l4.5,9 h-9 z";
    } else if (op.state === "near") {
      data.d = "M" + cx + "," + (y - 4.5).toFixed(2) + " l4.5,4.5 l-4.5,4.5 l-4.5,-4.5 z";
    } else {
      data.cx = cx; data.cy = cy; data.r = 3;
      return svgEl("circle", data);
    }
    data["data-cx"] = cx; data["data-cy"] = cy;
    return svgEl("path", data);
  };

  // One polyline per run of consecutive compared positions; at most ~2 points per pixel column.
  Plot.prototype.lines = function (name, values, first, last, y, out) {
    var pos = this.s.data.raw.pos, width = this.right - this.left;
    var points = [], previous = null, column = null, low = null, high = null, self = this;
    function flushColumn() {
      if (low === null) { return; }
      var a = low, b = high;
      if (a[0] > b[0]) { var t = a; a = b; b = t; }
      points.push(a[1] + "," + a[2]);
      if (b !== a) { points.push(b[1] + "," + b[2]); }
      low = high = null;
    }
    function flushLine() {
      flushColumn();
      if (points.length) { out.appendChild(svgEl("polyline", {"class": "line " + name, points: points.join(" ")})); }
      points = [];
    }
    for (var i = first; i < last; i++) {
      var v = values[i];
      if (v === null || (previous !== null && pos[i] !== pos[previous] + 1)) { flushLine(); }
      if (v === null) { previous = null; continue; }
      var x = self.x(pos[i]), py = y(v), c = Math.floor((x - self.left) * 900 / width);
      if (c !== column) { flushColumn(); column = c; }
      var p = [i, x.toFixed(2), py.toFixed(2), py];
      if (low === null || py > low[3]) { low = p; }
      if (high === null || py < high[3]) { high = p; }
      previous = i;
    }
    flushLine();
  };

  Plot.prototype.draw = function () {
    var data = this.s.data, raw = data.raw, self = this;
    var first = data.from(Math.floor(this.win[0])), last = data.from(Math.floor(this.win[1]) + 1);
    var g = svgEl("g", {"class": "series"}), count = last - first, busy = 0;
    for (var b = first; b < last; b++) { if (raw.css[raw.state[b]] !== "v-clean" && raw.css[raw.state[b]] !== "v-not-compared") { busy++; } }
    var marks = count <= ALL_MARKS ? "all" : busy <= FLAGGED_MARKS ? "flagged" : "introducers";
    g.setAttribute("data-marks", marks);
    var yc = function (v) { return axisY(self.cos, v, false); }, yr = function (v) { return axisY(self.red, v, true); };
    this.lines("cos", raw.cos, first, last, yc, g);
    this.lines("red", raw.redv, first, last, yr, g);
    for (var i = first; i < last; i++) {
      var op = data.op(raw.pos[i]), quiet = op.css === "v-clean" || op.css === "v-not-compared";
      if (!(marks === "all" || (marks === "flagged" && !quiet) || op.state === "introduces")) { continue; }
      var x = this.x(op.pos);
      if (op.cos === null) {
        var y0 = this.cos.top + this.cos.height - 6;
        g.appendChild(op.state === "introduces" ? this.mark("cos", op, x, y0)
          : svgEl("path", {"class": "pt nan cross " + op.css, "data-pos": op.pos, "data-state": op.state,
                           d: "M" + (x - 3.5).toFixed(2) + "," + (y0 - 3.5).toFixed(2) + " l7,7 m0,-7 l-7,7"}));
      } else {
        g.appendChild(this.mark("cos", op, x, yc(op.cos)));
      }
      if (op.red !== null) { g.appendChild(this.mark("red", op, x, yr(op.red))); }
    }
    this.series.parentNode.replaceChild(g, this.series);
    this.series = g;
    var ticks = svgEl("g", {"class": "xticks", "data-y": this.xticks.dataset.y});
    niceTicks(this.win[0], Math.max(this.win[1], this.win[0] + 1), 8).forEach(function (t) {
      if (t < self.win[0] || t > self.win[1]) { return; }
      var text = svgEl("text", {"class": "xtick", x: self.x(t).toFixed(2), y: ticks.dataset.y, "text-anchor": "middle"});
      text.textContent = String(t);
      ticks.appendChild(text);
    });
    this.xticks.parentNode.replaceChild(ticks, this.xticks);
    this.xticks = ticks;
    var intro = this.svg.querySelector("g.introducer");
    if (intro) {
      var ip = +intro.dataset.pos, inside = ip >= this.win[0] && ip <= this.win[1];
      intro.style.display = inside ? "" : "none";
      intro.querySelectorAll("line, text").forEach(function (node) {
        var x = self.x(ip).toFixed(2);
        if (node.tagName === "line") { node.setAttribute("x1", x); node.setAttribute("x2", x); } else { node.setAttribute("x", x); }
      });
    }
    var x0 = this.x(this.win[0], this.full), x1 = this.x(this.win[1], this.full);
    this.windowRect.setAttribute("x", x0.toFixed(2));
    this.windowRect.setAttribute("width", Math.max(x1 - x0, 2).toFixed(2));
    this.s.guide();
  };

  Plot.prototype.show = function (lo, hi) {  // the window [lo, hi] of positions, kept inside the curve
    var span = Math.max(hi - lo, Math.min(20, this.full[1] - this.full[0]));
    span = Math.min(span, this.full[1] - this.full[0]);
    lo = Math.max(this.full[0], Math.min(lo, this.full[1] - span));
    this.win = [lo, lo + span];
    this.draw();
  };

  Plot.prototype.zoom = function (factor, around) {
    var w = this.win, c = around === undefined ? (w[0] + w[1]) / 2 : around;
    this.show(c - (c - w[0]) / factor, c + (w[1] - c) / factor);
  };

  Plot.prototype.svgX = function (event) {
    var point = this.svg.createSVGPoint();
    point.x = event.clientX; point.y = event.clientY;
    return point.matrixTransform(this.svg.getScreenCTM().inverse()).x;
  };

  Plot.prototype.bind = function () {
    var self = this, s = this.s, area = this.svg.querySelector("rect.hover"), drag = null;
    area.addEventListener("mousedown", function (e) { drag = {x: self.svgX(e), win: self.win.slice(), moved: false}; e.preventDefault(); self.svg.focus(); });
    window.addEventListener("mousemove", function (e) {
      if (!drag) { return; }
      var dx = self.svgX(e) - drag.x;
      if (Math.abs(dx) > 3) { drag.moved = true; }
      if (drag.moved) {
        var per = (drag.win[1] - drag.win[0]) / (self.right - self.left);
        self.show(drag.win[0] - dx * per, drag.win[1] - dx * per);
      }
    });
    window.addEventListener("mouseup", function (e) {
      if (drag && !drag.moved && e.target === area) { s.select(s.nearest(self.posAt(self.svgX(e)))); }
      drag = null;
    });
    area.addEventListener("mousemove", function (e) { if (!drag) { s.hover(e, s.nearest(self.posAt(self.svgX(e)))); } });
    area.addEventListener("mouseleave", function () { s.tip.hidden = true; });
    this.svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      self.zoom(e.deltaY < 0 ? 1.25 : 0.8, self.posAt(self.svgX(e)));
    }, {passive: false});
    var strip = this.svg.querySelector("g.overview"), brush = null;
    function stripPos(e) { var w = self.full; return w[0] + (self.svgX(e) - self.left) / (self.right - self.left) * (w[1] - w[0]); }
    strip.addEventListener("mousedown", function (e) { brush = stripPos(e); e.preventDefault(); });
    window.addEventListener("mousemove", function (e) { if (brush !== null) { var p = stripPos(e); self.show(Math.min(brush, p), Math.max(brush, p)); } });
    window.addEventListener("mouseup", function (e) {
      if (brush !== null && Math.abs(stripPos(e) - brush) < 1) {  // a click: centre the window there
        var half = (self.win[1] - self.win[0]) / 2;
        self.show(brush - half, brush + half);
      }
      brush = null;
    });
    this.svg.addEventListener("keydown", function (e) {
      var keys = {"ArrowRight": 1, "ArrowLeft": -1}, step = keys[e.key];
      if (step) { s.step(step); } else if (e.key === "+" || e.key === "=") { self.zoom(2); }
      else if (e.key === "-") { self.zoom(0.5); } else if (e.key === "0") { self.show(self.full[0], self.full[1]); }
      else if (e.key === "n" || e.key === "p") { s.nextIntroducer(e.key === "n" ? 1 : -1); }
      else { return; }
      e.preventDefault();
    });
  };

  // --- the table ------------------------------------------------------------------------

  function Table(section) {
    this.s = section;
    this.table = document.getElementById("flagged-" + section.id);
    this.body = this.table.tBodies[0];
    this.chunk = +this.table.dataset.rows;
    this.open = {};  // group number -> inheritors unfolded
    this.filter = document.getElementById("filter-" + section.id);
    this.state = document.getElementById("state-" + section.id);
    this.count = document.getElementById("count-" + section.id);
    this.sort = null;
    this.causes = section.data.raw.causes;
  }

  // the rows to show, in order: ["op", pos, group, folded inheritors] or ["fold", group, count]
  Table.prototype.items = function () {
    var raw = this.s.data.raw, data = this.s.data, out = [], self = this;
    var text = this.filter.value.trim().toLowerCase(), state = this.state.value;
    if (!text && !state && !this.sort) {
      raw.groups.forEach(function (group, k) {
        if (group[0] === null) {
          out.push(["fold", k, group[1].length]);
        } else {
          out.push(["op", group[0], k, group[1].length]);
        }
        if (self.open[k]) { group[1].forEach(function (pos) { out.push(["op", pos, k, -1]); }); }
      });
      return out;
    }
    var all = [];
    raw.groups.forEach(function (group) { if (group[0] !== null) { all.push(group[0]); } all = all.concat(group[1]); });
    all = all.filter(function (pos) {
      var op = data.op(pos);
      return (!state || op.state === state) &&
        (!text || op.name.toLowerCase().indexOf(text) >= 0 || op.type.toLowerCase().indexOf(text) >= 0);
    });
    all.sort(this.sort ? this.sort : function (a, b) { return a - b; });
    return all.map(function (pos) { return ["op", pos, null, -1]; });
  };

  function cosSpans(td, list, states) {
    if (!list.length) { td.textContent = "none compared"; return; }
    list.forEach(function (pair, j) { td.appendChild(el("span", pair[0] + ": " + fmt(pair[1]), states[j])); });
  }

  Table.prototype.row = function (item) {
    var op = this.s.data.op(item[1]), tr = el("tr"), full = op.full || ["", [], [], [], [], [], "", ""];
    tr.dataset.pos = op.pos;
    tr.dataset.state = op.state;
    if (item[3] === -1 && item[2] !== null) { tr.className = "inheritor"; }
    var name = el("td", op.name, "name");
    name.dataset.label = "op";
    var cells = [name, el("td", String(op.index)), el("td", op.type)];
    cells[1].dataset.label = "Index"; cells[2].dataset.label = "type";
    var verdict = el("td", op.marked, "verdict " + op.css);
    verdict.dataset.state = op.state; verdict.dataset.label = "verdict";
    if (full[6]) { verdict.appendChild(el("span", full[6], "evidence")); }
    if (item[3] > 0) {
      var fold = el("button", (this.open[item[2]] ? "\u25be " : "\u25b8 ") + item[3] + " inherit(s) it", "fold");
      fold.type = "button"; fold.dataset.group = item[2];
      fold.setAttribute("aria-expanded", this.open[item[2]] ? "true" : "false");
      verdict.appendChild(fold);
    }
    var outs = el("td", undefined, "cosines");
    outs.dataset.label = "output cosines";
    cosSpans(outs, full[2], full[4]);
    var red = el("td", fmt(op.red));
    red.dataset.label = "RED";
    cells.push(verdict, outs, red);
    if (this.causes) { var cause = el("td", full[7], "cause"); cause.dataset.label = "cause"; cells.push(cause); }
    cells.forEach(function (td) { tr.appendChild(td); });
    if (this.s.selected === op.pos) { tr.classList.add("sel"); }
    return tr;
  };

  Table.prototype.foldRow = function (item) {
    var tr = el("tr", undefined, "orphans"), td = el("td");
    td.colSpan = this.table.tHead.rows[0].cells.length;
    var fold = el("button", (this.open[item[1]] ? "\u25be " : "\u25b8 ") + item[2] +
                  " flagged op(s) inherit an error from before the first flagged op", "fold");
    fold.type = "button"; fold.dataset.group = item[1];
    td.appendChild(fold); tr.appendChild(td);
    return tr;
  };

  // Render the first ``upto`` rows, then a sentinel that renders more when it scrolls into view.
  Table.prototype.render = function (upto) {
    var items = this.items(), body = this.body, self = this;
    this.list = items;
    this.shown = Math.min(items.length, Math.max(upto || this.chunk, this.chunk));
    body.textContent = "";
    var frag = document.createDocumentFragment();
    for (var i = 0; i < this.shown; i++) { frag.appendChild(items[i][0] === "fold" ? this.foldRow(items[i]) : this.row(items[i])); }
    body.appendChild(frag);
    this.more();
    var total = this.s.data.raw.groups.reduce(function (n, g) { return n + g[1].length + (g[0] === null ? 0 : 1); }, 0);
    this.count.textContent = this.filter.value || this.state.value
      ? items.length + " of " + total + " flagged ops match" : this.count.dataset.text;
  };

  Table.prototype.more = function () {
    var self = this;
    if (this.sentinel) { this.sentinel.remove(); this.sentinel = null; }
    if (this.shown >= this.list.length) { return; }
    var tr = el("tr", undefined, "more"), td = el("td", (this.list.length - this.shown) + " more rows: scroll on");
    td.colSpan = this.table.tHead.rows[0].cells.length;
    tr.appendChild(td);
    this.body.appendChild(tr);
    this.sentinel = tr;
    this.observer.observe(tr);
  };

  Table.prototype.extend = function () {
    var end = Math.min(this.list.length, this.shown + this.chunk), frag = document.createDocumentFragment();
    for (var i = this.shown; i < end; i++) { frag.appendChild(this.list[i][0] === "fold" ? this.foldRow(this.list[i]) : this.row(this.list[i])); }
    if (this.sentinel) { this.observer.unobserve(this.sentinel); this.sentinel.remove(); this.sentinel = null; }
    this.body.appendChild(frag);
    this.shown = end;
    this.more();
  };

  // Show the row of ``pos`` (unfolding its group and rendering down to it) and mark it.
  Table.prototype.reveal = function (pos) {
    var groups = this.s.data.raw.groups, self = this;
    if (!this.filter.value && !this.state.value && !this.sort) {
      groups.forEach(function (g, k) { if (g[1].indexOf(pos) >= 0) { self.open[k] = true; } });
    }
    var items = this.items(), at = -1;
    for (var i = 0; i < items.length; i++) { if (items[i][0] === "op" && items[i][1] === pos) { at = i; break; } }
    if (at >= this.shown || items.length !== this.list.length) { this.render(at + 1); }
    var old = this.body.querySelector("tr.sel");
    if (old) { old.classList.remove("sel"); }
    var tr = this.body.querySelector('tr[data-pos="' + pos + '"]');
    if (tr) { tr.classList.add("sel"); }
    return tr;
  };

  Table.prototype.bind = function () {
    var self = this;
    this.count.dataset.text = this.count.textContent;
    this.observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) { if (entry.isIntersecting) { self.extend(); } });
    }, {rootMargin: "600px"});
    this.body.addEventListener("click", function (e) {
      var fold = e.target.closest("button.fold");
      if (fold) { var k = +fold.dataset.group; self.open[k] = !self.open[k]; self.render(self.shown); return; }
      var tr = e.target.closest("tr[data-pos]");
      if (tr) { self.s.select(+tr.dataset.pos, "table"); }
    });
    var again = function () { self.render(); };
    this.filter.addEventListener("input", again);
    this.state.addEventListener("change", again);
    this.table.querySelectorAll("th").forEach(function (th) {
      th.querySelector("button").addEventListener("click", function () { self.sortBy(th); });
    });
    this.render();
  };

  Table.prototype.sortBy = function (th) {
    var key = th.dataset.key, numeric = th.dataset.type === "num", data = this.s.data;
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    function value(pos) {
      var op = data.op(pos), full = op.full || ["", [], [], [], [], [], "", ""];
      if (key === "index") { return op.index; }
      if (key === "cos") { return op.cos === null ? NaN : op.cos; }
      if (key === "red") { return op.red === null ? NaN : op.red; }
      return {name: op.name, type: op.type, state: op.state, cause: full[7]}[key];
    }
    this.sort = function (a, b) {
      var x = value(a), y = value(b);
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }  // NaN last either way
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    };
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    this.render();
  };

  // --- the subgraph ---------------------------------------------------------------------

  function Graph(section) {
    this.s = section;
    this.wrap = document.getElementById("subgraph-" + section.id);
    this.svg = this.wrap.querySelector("svg");
    this.base = [this.svg.width.baseVal.value, this.svg.height.baseVal.value];
    this.scale = 1;
  }

  Graph.prototype.node = function () {  // the op the subgraph is about
    var focus = this.s.data.op(this.s.data.raw.first);
    var nodes = this.wrap.querySelectorAll("[data-op]");
    for (var i = 0; i < nodes.length; i++) { if (focus && nodes[i].getAttribute("data-op") === focus.name) { return nodes[i]; } }
    return this.wrap.querySelector(".node.root") || nodes[0];
  };

  Graph.prototype.centre = function () {
    var node = this.node();
    if (!node) { return; }
    var box = node.getBoundingClientRect(), wrap = this.wrap.getBoundingClientRect();
    this.wrap.scrollLeft += box.left + box.width / 2 - (wrap.left + wrap.width / 2);
    this.wrap.scrollTop += box.top + box.height / 2 - (wrap.top + wrap.height / 2);
  };

  Graph.prototype.zoom = function (factor) {
    var fit = Math.min(1, this.wrap.clientWidth / this.base[0]);
    this.scale = factor === 0 ? fit : Math.max(0.2, Math.min(4, this.scale * factor));
    this.svg.setAttribute("width", (this.base[0] * this.scale).toFixed(0));
    this.svg.setAttribute("height", (this.base[1] * this.scale).toFixed(0));
    this.centre();
  };

  Graph.prototype.bind = function () {
    var self = this, drag = null;
    this.wrap.addEventListener("click", function (e) {
      var node = e.target.closest("[data-op]");
      if (node && !(drag && drag.moved)) { var pos = self.s.data.byName[node.getAttribute("data-op")]; if (pos !== undefined) { self.s.select(pos, "graph"); } }
    });
    this.wrap.addEventListener("mousedown", function (e) { drag = {x: e.clientX, y: e.clientY, l: self.wrap.scrollLeft, t: self.wrap.scrollTop, moved: false}; });
    window.addEventListener("mousemove", function (e) {
      if (!drag || !(e.buttons & 1)) { return; }
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 4) { drag.moved = true; }
      self.wrap.scrollLeft = drag.l - dx; self.wrap.scrollTop = drag.t - dy;
    });
    window.addEventListener("mouseup", function () { setTimeout(function () { drag = null; }, 0); });
    this.wrap.addEventListener("wheel", function (e) {
      if (!e.ctrlKey && document.activeElement !== self.wrap) { return; }  // page scroll stays page scroll
      e.preventDefault();
      self.zoom(e.deltaY < 0 ? 1.2 : 1 / 1.2);
    }, {passive: false});
    var tools = document.querySelector('.graph-tools[data-for="subgraph-' + this.s.id + '"]');
    if (tools) {
      tools.addEventListener("click", function (e) {
        var b = e.target.closest("button");
        if (!b) { return; }
        if (b.dataset.zoom === "centre") { self.centre(); } else { self.zoom(+b.dataset.zoom); }
      });
    }
    this.centre();
  };

  // --- one result -----------------------------------------------------------------------

  function Section(id) {
    this.id = id;
    this.data = new Data(JSON.parse(document.getElementById("data-" + id).textContent));
    this.tip = document.getElementById("tip-" + id);
    this.panel = document.getElementById("sel-" + id);
    this.selected = null;
    this.plot = document.getElementById("plot-" + id) ? new Plot(this) : null;
    this.table = document.getElementById("flagged-" + id) ? new Table(this) : null;
    this.graph = document.getElementById("subgraph-" + id) ? new Graph(this) : null;
  }

  // the op with a compared output nearest to position ``pos``
  Section.prototype.nearest = function (pos) {
    var p = this.data.raw.pos, i = this.data.from(pos);
    if (!p.length) { return null; }
    if (i >= p.length) { return p[p.length - 1]; }
    if (i > 0 && Math.abs(p[i - 1] - pos) <= Math.abs(p[i] - pos)) { return p[i - 1]; }
    return p[i];
  };

  Section.prototype.guide = function () {
    if (!this.plot) { return; }
    var svg = this.plot.svg, line = svg.querySelector("line.guide"), pos = this.selected;
    if (pos === null || pos < this.plot.win[0] || pos > this.plot.win[1]) { if (line) { line.remove(); } return; }
    if (!line) {
      line = svgEl("line", {"class": "guide", y1: svg.dataset.top, y2: svg.dataset.bottom});
      svg.insertBefore(line, svg.querySelector("rect.hover"));
    }
    var x = this.plot.x(pos).toFixed(2);
    line.setAttribute("x1", x); line.setAttribute("x2", x);
  };

  Section.prototype.hover = function (event, pos) {
    var op = this.data.op(pos);
    if (!op) { return; }
    var tip = this.tip;
    tip.textContent = "";
    tip.appendChild(el("b", op.name));
    tip.appendChild(el("div", "[" + op.type + "] Index " + op.index + " \u00b7 " + op.marked));
    tip.appendChild(el("div", "output cosine " + fmt(op.cos)));
    tip.appendChild(el("div", "RelativeEuclideanDistance " + fmt(op.red)));
    var box = tip.parentNode.getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(event.clientX - box.left + 14, box.width - 260)) + "px";
    tip.style.top = (event.clientY - box.top + 14) + "px";
    tip.hidden = false;
  };

  Section.prototype.select = function (pos, from) {
    var op = this.data.op(pos);
    if (!op) { return; }
    this.selected = pos;
    var box = this.panel, full = op.full, raw = this.data.raw;
    box.textContent = "";
    box.appendChild(el("b", op.name, "name"));
    box.appendChild(el("div", "[" + op.type + "] Index " + op.index + " \u00b7 ", undefined));
    box.lastChild.appendChild(el("span", op.marked, op.css));
    if (full) {
      box.lastChild.appendChild(document.createTextNode(" \u00b7 GroundTruth " + full[0]));
      if (full[6]) { box.appendChild(el("div", full[6], "evidence")); }
      if (full[7]) { box.appendChild(el("div", "cause: " + full[7], "cause")); }
      var ins = el("div", "input cosines: "), outs = el("div", "output cosines: ");
      cosSpans(ins, full[1], full[3]); cosSpans(outs, full[2], full[4]);
      box.appendChild(ins); box.appendChild(outs);
      var table = el("table");
      raw.metrics.forEach(function (name, i) {
        var row = el("tr");
        row.appendChild(el("td", "worst output " + name));
        row.appendChild(el("td", fmt(full[5][i])));
        table.appendChild(row);
      });
      box.appendChild(table);
    } else {
      box.appendChild(el("div", "output cosine " + fmt(op.cos) + " \u00b7 RelativeEuclideanDistance " + fmt(op.red)));
      box.appendChild(el("div", "within rounding: its other metrics are in the result CSV", "muted"));
    }
    if (this.plot && (pos < this.plot.win[0] || pos > this.plot.win[1])) {
      var half = (this.plot.win[1] - this.plot.win[0]) / 2;
      this.plot.show(pos - half, pos + half);
    }
    this.guide();
    if (this.table && op.full && op.state !== "clean") {
      var tr = this.table.reveal(pos);
      if (tr && from === "keys") { tr.scrollIntoView({block: "nearest"}); }
    }
  };

  Section.prototype.step = function (by) {
    var p = this.data.raw.pos;
    if (!p.length) { return; }
    var i = this.selected === null ? this.data.from(this.plot.win[0]) - (by > 0 ? 1 : 0) : this.data.at[this.selected];
    this.select(p[Math.max(0, Math.min(p.length - 1, i + by))], "keys");
  };

  Section.prototype.nextIntroducer = function (by) {
    var raw = this.data.raw, i = this.selected === null ? (by > 0 ? -1 : raw.pos.length) : this.data.at[this.selected];
    for (i += by; i >= 0 && i < raw.pos.length; i += by) {
      if (raw.state[i] === raw.introduces) { this.select(raw.pos[i], "keys"); return; }
    }
  };

  Section.prototype.bind = function () {
    if (this.plot) { this.plot.bind(); }
    if (this.table) { this.table.bind(); }
    if (this.graph) { this.graph.bind(); }
  };

  document.querySelectorAll("section.result[data-section]").forEach(function (node) {
    new Section(node.dataset.section).bind();
  });
})();
