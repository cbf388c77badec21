// PrecisionTool report, 3 of 5: the flagged table. Introducers first, each with its inheritors
// folded under it (data.groups); a filter, a verdict choice or a sort lists the ops flat. Rows
// are drawn 200 at a time as the end of the table scrolls into view.
(function (PT) {
  "use strict";
  var el = PT.el;
  var fmt = PT.fmt;
  var cosSpans = PT.cosSpans;

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
      var op = data.op(pos, true);
      return (!state || op.state === state) &&
        (!text || op.name.toLowerCase().indexOf(text) >= 0 || op.type.toLowerCase().indexOf(text) >= 0);
    });
    if (this.sort) {
      var sort = this.sort, keyed = all.map(function (pos) { return [sort.value(pos), pos]; });
      keyed.sort(function (a, b) { return sort.compare(a[0], b[0]) || a[1] - b[1]; });
      all = keyed.map(function (pair) { return pair[1]; });
    } else {
      all.sort(function (a, b) { return a - b; });
    }
    return all.map(function (pos) { return ["op", pos, null, -1]; });
  };

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

  // Scroll the table's own box (never the page: the keys step on the curve) to show ``tr``.
  Table.prototype.show = function (tr) {
    var wrap = this.table.parentNode, row = tr.getBoundingClientRect(), box = wrap.getBoundingClientRect();
    var head = this.table.tHead.getBoundingClientRect().height;
    if (row.top < box.top + head) { wrap.scrollTop -= box.top + head - row.top; }
    else if (row.bottom > box.bottom) { wrap.scrollTop += row.bottom - box.bottom; }
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
      var op = data.op(pos, key !== "cause");
      if (key === "index") { return op.index; }
      if (key === "cos") { return op.cos === null ? NaN : op.cos; }
      if (key === "red") { return op.red === null ? NaN : op.red; }
      return {name: op.name, type: op.type, state: op.state, cause: op.full ? op.full[7] : ""}[key];
    }
    function compare(x, y) {
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }  // NaN last either way
        return ascending ? x - y : y - x;
      }
      return ascending ? x.localeCompare(y) : y.localeCompare(x);
    }
    this.sort = {value: value, compare: compare};
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    this.render();
  };

  PT.Table = Table;
})(window.PrecisionToolReport = window.PrecisionToolReport || {});
