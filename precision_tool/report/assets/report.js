// PrecisionTool report: hover and click on the plot, the subgraph and the table; sortable tables.
// Text from the data is only ever set with textContent, never parsed as HTML.
(function () {
  "use strict";
  var POS = 0, INDEX = 1, X = 2, NAME = 3, TYPE = 4, VERDICT = 5, GT = 6, IN = 7, OUT = 8, M = 9;

  function fmt(v) { return v === null || v === undefined ? "NaN" : v.toFixed(6); }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = text; }
    if (cls) { node.className = cls; }
    return node;
  }

  function cosines(list) {
    if (!list.length) { return "none compared"; }
    return list.map(function (v, i) { return i + ": " + fmt(v); }).join("  ");
  }

  function Section(id) {
    var script = document.getElementById("data-" + id);
    this.id = id;
    this.data = JSON.parse(script.textContent);
    this.ops = this.data.ops.slice().sort(function (a, b) { return a[X] - b[X]; });
    this.byPos = {};
    this.byName = {};
    for (var i = 0; i < this.ops.length; i++) {
      this.byPos[this.ops[i][POS]] = this.ops[i];
      this.byName[this.ops[i][NAME]] = this.ops[i];
    }
    this.svg = document.getElementById("plot-" + id);
    this.tip = document.getElementById("tip-" + id);
    this.selected = document.getElementById("sel-" + id);
    this.table = document.getElementById("flagged-" + id);
  }

  Section.prototype.nearest = function (x) {
    var ops = this.ops, lo = 0, hi = ops.length - 1;
    if (hi < 0) { return null; }
    while (hi - lo > 1) {
      var mid = (lo + hi) >> 1;
      if (ops[mid][X] < x) { lo = mid; } else { hi = mid; }
    }
    return Math.abs(ops[lo][X] - x) <= Math.abs(ops[hi][X] - x) ? ops[lo] : ops[hi];
  };

  Section.prototype.svgX = function (event) {
    var point = this.svg.createSVGPoint();
    point.x = event.clientX;
    point.y = event.clientY;
    return point.matrixTransform(this.svg.getScreenCTM().inverse()).x;
  };

  Section.prototype.guide = function (op) {
    var line = this.svg.querySelector("line.guide");
    if (!line) {
      line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      line.setAttribute("class", "guide");
      line.setAttribute("y1", this.svg.dataset.top);
      line.setAttribute("y2", this.svg.dataset.bottom);
      this.svg.insertBefore(line, this.svg.querySelector("rect.hover"));
    }
    line.setAttribute("x1", op[X]);
    line.setAttribute("x2", op[X]);
  };

  Section.prototype.hover = function (event) {
    var op = this.nearest(this.svgX(event));
    if (!op) { return; }
    this.guide(op);
    var tip = this.tip;
    tip.textContent = "";
    tip.appendChild(el("b", op[NAME]));
    tip.appendChild(el("div", "[" + op[TYPE] + "] Index " + op[INDEX] + " \u00b7 " + op[VERDICT]));
    tip.appendChild(el("div", "output cosine " + cosines(op[OUT])));
    tip.appendChild(el("div", "RelativeEuclideanDistance " + fmt(op[M][this.data.red])));
    var box = tip.parentNode.getBoundingClientRect();
    tip.style.left = Math.min(event.clientX - box.left + 14, box.width - 260) + "px";
    tip.style.top = (event.clientY - box.top + 14) + "px";
    tip.hidden = false;
  };

  Section.prototype.select = function (op) {
    if (!op) { return; }
    this.guide(op);
    var box = this.selected;
    box.textContent = "";
    box.appendChild(el("b", op[NAME], "name"));
    box.appendChild(el("div", "[" + op[TYPE] + "] Index " + op[INDEX] + " \u00b7 " + op[VERDICT] +
                              " \u00b7 GroundTruth " + op[GT]));
    box.appendChild(el("div", "input cosines: " + cosines(op[IN])));
    box.appendChild(el("div", "output cosines: " + cosines(op[OUT])));
    var table = el("table");
    var names = this.data.metrics;
    for (var i = 0; i < names.length; i++) {
      var row = el("tr");
      row.appendChild(el("td", "worst output " + names[i]));
      row.appendChild(el("td", fmt(op[M][i])));
      table.appendChild(row);
    }
    box.appendChild(table);
    if (this.table) {
      var old = this.table.querySelector("tr.sel");
      if (old) { old.classList.remove("sel"); }
      var tr = this.table.querySelector('tr[data-pos="' + op[POS] + '"]');
      if (tr) { tr.classList.add("sel"); }
    }
  };

  Section.prototype.bind = function () {
    var self = this;
    if (this.svg) {
      var area = this.svg.querySelector("rect.hover");
      area.addEventListener("mousemove", function (e) { self.hover(e); });
      area.addEventListener("mouseleave", function () { self.tip.hidden = true; });
      area.addEventListener("click", function (e) { self.select(self.nearest(self.svgX(e))); });
    }
    if (this.table) {
      this.table.querySelector("tbody").addEventListener("click", function (e) {
        var tr = e.target.closest("tr");
        if (tr) { self.select(self.byPos[tr.dataset.pos]); }
      });
    }
    var graph = document.getElementById("subgraph-" + this.id);
    if (graph) {
      graph.addEventListener("click", function (e) {
        var node = e.target.closest("[data-op]");
        if (node) { self.select(self.byName[node.getAttribute("data-op")]); }
      });
    }
  };

  function sortValue(cell, numeric) {
    if (!numeric) { return cell.textContent; }
    var text = cell.getAttribute("data-sort");
    return text === null || text === "" ? NaN : parseFloat(text);
  }

  function sortBy(table, th) {
    var column = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-type") === "num";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortValue(a.cells[column], numeric), y = sortValue(b.cells[column], numeric);
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }  // NaN last either way
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th) {
      th.querySelector("button").addEventListener("click", function () { sortBy(table, th); });
    });
  });
  document.querySelectorAll("section.result[data-section]").forEach(function (node) {
    new Section(node.dataset.section).bind();
  });
})();
