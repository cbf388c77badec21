// PrecisionTool report, 2 of 5: the curve. The SVG plot.py wrote is the first drawing; wheel,
// drag, the overview strip and the keys choose a window of execution positions, and the series
// and x ticks are drawn again for it from the page's data on plot.py's axes.
(function (PT) {
  "use strict";
  var svgEl = PT.svgEl;
  var niceTicks = PT.niceTicks;

  var ALL_MARKS = 3000, FLAGGED_MARKS = 500;  // in the window shown: plot.py's MAX_MARKERS, MAX_FLAGGED_MARKS

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
    if (op.shape === "triangle") {
      data.d = "M" + cx + "," + (y - 4.5).toFixed(2) + " l4.5,9 h-9 z";
    } else if (op.shape === "diamond") {
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
    for (var b = first; b < last; b++) { if (!raw.quiet[raw.state[b]]) { busy++; } }
    var marks = count <= ALL_MARKS ? "all" : busy <= FLAGGED_MARKS ? "flagged" : "introducers";
    g.setAttribute("data-marks", marks);
    var yc = function (v) { return axisY(self.cos, v, false); }, yr = function (v) { return axisY(self.red, v, true); };
    this.lines("cos", raw.cos, first, last, yc, g);
    this.lines("red", raw.redv, first, last, yr, g);
    for (var i = first; i < last; i++) {
      var code = raw.state[i], introduces = code === raw.introduces;
      if (!(marks === "all" || (marks === "flagged" && !raw.quiet[code]) || introduces)) { continue; }
      var op = data.op(raw.pos[i], true);
      var x = this.x(op.pos);
      if (op.cos === null) {
        var y0 = this.cos.top + this.cos.height - 6;
        g.appendChild(introduces ? this.mark("cos", op, x, y0)
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
      if (!e.ctrlKey && document.activeElement !== self.svg) { return; }  // page scroll stays page scroll
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

  PT.Plot = Plot;
})(window.PrecisionToolReport = window.PrecisionToolReport || {});
