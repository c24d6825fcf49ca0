"""The report page's stylesheet and viewer script (vanilla JS, no library, no network).

The viewer reads the episodes from ``<script type="application/json" id="episodes-data">``
and keeps its position in ``#viewer``'s ``data-episode`` (index into the episode list) and
``data-step`` attributes. Keys: ←/→ previous / next step, ↑/↓ or k/j previous / next episode
(among the filtered ones). Filters: "failed only" and one task.
"""

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1180px;padding:12px 20px;color:#222}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3;text-align:left}td{text-align:right;font-variant-numeric:tabular-nums}
td.l{text-align:left}.note{color:#666;font-size:12px}
#problems{background:#fff4e5;border:1px solid #f0b35a;padding:4px 14px;margin:10px 0}
#problems.none{background:#eef8ee;border-color:#8c8}
.charts{display:flex;flex-wrap:wrap;gap:10px}svg.chart{border:1px solid #ddd;background:#fff}
svg .frame{fill:none;stroke:#999}svg .ct{font-size:12px;text-anchor:middle}
svg .yt{font-size:10px;text-anchor:end}svg .xt{font-size:10px}svg .lg{font-size:11px}
#viewer{border:1px solid #ccc;padding:8px;margin:8px 0}.vbar{display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.vmain{display:flex;gap:14px;margin-top:8px;flex-wrap:wrap}.pic{position:relative;display:inline-block;max-width:640px}
.pic img{min-width:320px;max-width:640px;max-height:80vh;display:block;image-rendering:pixelated}.pic svg{position:absolute;left:0;top:0;width:100%;height:100%}
.side{flex:1;min-width:280px}pre{white-space:pre-wrap;background:#f7f7f7;padding:6px;margin:4px 0;max-height:260px;overflow:auto}
.ok{color:#1a7f37;font-weight:bold}.bad{color:#c62828;font-weight:bold}
.gallery img{max-width:360px;border:1px solid #ddd;margin:4px}
"""

JS = r"""
(function () {
  "use strict";
  var node = document.getElementById("episodes-data");
  var viewer = document.getElementById("viewer");
  if (!node || !viewer) { return; }
  var episodes = JSON.parse(node.textContent);
  var failedBox = document.getElementById("failed-only");
  var taskSel = document.getElementById("task-filter");
  var state = {list: [], pos: 0, step: 0};

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function svgEl(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function filtered() {
    var onlyFailed = failedBox && failedBox.checked;
    var task = taskSel ? taskSel.value : "";
    var out = [];
    episodes.forEach(function (ep, i) {
      if (onlyFailed && ep.success) { return; }
      if (task && ep.task !== task) { return; }
      out.push(i);
    });
    return out;
  }
  function drawOverlay(svg, ov) {
    function box(b, cls, color) {
      if (!b) { return; }
      svg.appendChild(svgEl("rect", {x: b[0], y: b[1], width: Math.max(b[2] - b[0], 0),
        height: Math.max(b[3] - b[1], 0), fill: "none", stroke: color,
        "stroke-width": 0.006, "class": cls}));
    }
    box(ov.target, "target", "#2ca02c");
    box(ov.box, "pred-box", "#1f77b4");
    if (ov.point) {
      svg.appendChild(svgEl("circle", {cx: ov.point[0], cy: ov.point[1], r: 0.015,
        fill: "none", stroke: "#d62728", "stroke-width": 0.006, "class": "point"}));
    }
  }
  function render() {
    var body = document.getElementById("viewer-body");
    body.textContent = "";
    var count = document.getElementById("viewer-count");
    if (!state.list.length) {
      viewer.setAttribute("data-episode", "-1");
      viewer.setAttribute("data-step", "-1");
      count.textContent = "no episode matches the filters";
      return;
    }
    var idx = state.list[state.pos];
    var ep = episodes[idx];
    var nSteps = ep.steps.length;
    state.step = Math.max(0, Math.min(state.step, Math.max(nSteps - 1, 0)));
    viewer.setAttribute("data-episode", String(idx));
    viewer.setAttribute("data-step", String(state.step));
    count.textContent = "episode " + (state.pos + 1) + "/" + state.list.length +
      " · step " + (nSteps ? state.step + 1 : 0) + "/" + nSteps;
    var head = el("div", {"class": "vhead"});
    head.appendChild(el("b", {}, ep.id + "  "));
    head.appendChild(el("span", {"class": ep.success ? "ok" : "bad"}, ep.success ? "success" : "failed"));
    head.appendChild(el("span", {}, "  task: " + ep.task + "  reward: " +
      (ep.reward === null ? "–" : ep.reward.toFixed(3))));
    body.appendChild(head);
    body.appendChild(el("div", {"class": "instr"}, ep.instruction));
    var main = el("div", {"class": "vmain"});
    var step = ep.steps[state.step] || null;
    var pic = el("div", {"class": "pic"});
    var src = step && step.image ? step.image : ep.gif;
    if (src) {
      pic.appendChild(el("img", {src: src, alt: "step picture", id: "step-image"}));
      if (step && step.image && step.overlay) {
        var svg = svgEl("svg", {viewBox: "0 0 1 1", preserveAspectRatio: "none"});
        drawOverlay(svg, step.overlay);
        pic.appendChild(svg);
      }
    } else {
      pic.appendChild(el("div", {"class": "note"}, "no picture for this step"));
    }
    main.appendChild(pic);
    var side = el("div", {"class": "side"});
    if (step) {
      side.appendChild(el("div", {}, "model text"));
      side.appendChild(el("pre", {id: "step-text"}, step.text));
      side.appendChild(el("div", {}, "parsed action"));
      side.appendChild(el("pre", {id: "step-action"}, step.action));
      var t = el("table", {id: "step-terms"});
      var hr = el("tr", {}); hr.appendChild(el("th", {}, "reward term"));
      hr.appendChild(el("th", {}, "value")); t.appendChild(hr);
      Object.keys(step.reward_terms).forEach(function (k) {
        var v = step.reward_terms[k];
        var r = el("tr", {}); r.appendChild(el("td", {"class": "l"}, k));
        r.appendChild(el("td", {"data-value": v === null ? "" : String(v)},
          v === null ? "–" : v.toFixed(3)));
        t.appendChild(r);
      });
      side.appendChild(t);
    }
    if (ep.gif && step && step.image) {
      side.appendChild(el("div", {}, "episode GIF"));
      side.appendChild(el("img", {src: ep.gif, alt: "episode GIF", style: "max-width:300px"}));
    }
    main.appendChild(side);
    body.appendChild(main);
  }
  function refilter() {
    var cur = state.list[state.pos];
    state.list = filtered();
    var at = state.list.indexOf(cur);
    state.pos = at >= 0 ? at : 0;
    state.step = at >= 0 ? state.step : 0;
    render();
  }
  function move(dEp, dStep) {
    if (!state.list.length) { return; }
    if (dEp) {
      state.pos = (state.pos + dEp + state.list.length) % state.list.length;
      state.step = 0;
    } else {
      var n = episodes[state.list[state.pos]].steps.length;
      state.step = Math.max(0, Math.min(n - 1, state.step + dStep));
    }
    render();
  }
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" && e.target.type === "text" || tag === "SELECT" || tag === "TEXTAREA") { return; }
    var map = {ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0],
      j: [1, 0], k: [-1, 0]};
    var m = map[e.key];
    if (!m) { return; }
    e.preventDefault();
    move(m[0], m[1]);
  });
  [["prev-ep", -1, 0], ["next-ep", 1, 0], ["prev-step", 0, -1], ["next-step", 0, 1]]
    .forEach(function (b) {
      var btn = document.getElementById(b[0]);
      if (btn) { btn.addEventListener("click", function () { move(b[1], b[2]); }); }
    });
  if (failedBox) { failedBox.addEventListener("change", refilter); }
  if (taskSel) { taskSel.addEventListener("change", refilter); }
  state.list = filtered();
  render();
})();
"""
