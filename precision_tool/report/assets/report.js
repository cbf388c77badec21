// PrecisionTool report, 5 of 5: one result's section (hover, the pinned panel, stepping op by
// op) tying the curve, the table and the subgraph together, and the start of the page.
(function (PT) {
  "use strict";
  var el = PT.el;
  var fmt = PT.fmt;
  var svgEl = PT.svgEl;
  var cosSpans = PT.cosSpans;
  var Data = PT.Data;
  var Plot = PT.Plot;
  var Table = PT.Table;
  var Graph = PT.Graph;

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
    box.classList.remove("idle");
    var close = el("button", "\u00d7", "close");
    close.type = "button"; close.title = "unpin";
    box.appendChild(close);
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
      var metrics = el("div", undefined, "metrics");  // a grid: the panel stays a few lines tall
      raw.metrics.forEach(function (name, i) {
        var item = el("span", "worst output " + name + " ");
        item.appendChild(el("b", fmt(full[5][i])));
        metrics.appendChild(item);
      });
      box.appendChild(metrics);
    } else {
      box.appendChild(el("div", "output cosine " + fmt(op.cos) + " \u00b7 RelativeEuclideanDistance " + fmt(op.red)));
      box.appendChild(el("div", "within rounding: its other metrics are in the result CSV", "muted"));
    }
    if (this.plot && (pos < this.plot.win[0] || pos > this.plot.win[1])) {
      var half = (this.plot.win[1] - this.plot.win[0]) / 2;
      this.plot.show(pos - half, pos + half);
    }
    this.guide();
    if (this.table && op.full && !op.quiet) {
      var tr = this.table.reveal(pos);
      if (tr && from === "keys") { this.table.show(tr); }
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

  Section.prototype.unpin = function () {
    this.selected = null;
    this.panel.textContent = this.panel.dataset.prompt;
    this.panel.classList.add("idle");
    this.guide();
  };

  Section.prototype.bind = function () {
    var self = this;
    this.panel.dataset.prompt = this.panel.textContent;
    this.panel.addEventListener("click", function (e) { if (e.target.closest("button.close")) { self.unpin(); } });
    if (this.plot) { this.plot.bind(); }
    if (this.table) { this.table.bind(); }
    if (this.graph) { this.graph.bind(); }
  };

  document.querySelectorAll("section.result[data-section]").forEach(function (node) {
    new Section(node.dataset.section).bind();
  });

})(window.PrecisionToolReport = window.PrecisionToolReport || {});
