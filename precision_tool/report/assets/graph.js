// PrecisionTool report, 4 of 5: the subgraph, centred on its op when the page opens; +/-/fit,
// Ctrl+wheel (or the wheel once it has focus) zoom, dragging pans, a click on a node pins it.
(function (PT) {
  "use strict";
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

  PT.Graph = Graph;
})(window.PrecisionToolReport = window.PrecisionToolReport || {});
