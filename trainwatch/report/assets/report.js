/* trainwatch report page: reads the JSON data block and builds the page with uPlot.
   Log text is untrusted: it is only ever put into the page as text (Node.append of a string,
   textContent), never as HTML. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tw-data").textContent);
  var root = document.getElementById("tw");
  var PALETTE = ["#2f6fde", "#d9480f", "#2b8a3e", "#ae3ec9", "#e8590c", "#0c8599", "#c2255c", "#5f3dc4"];
  var DASHES = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
  var GROUP_ORDER = ["Loss", "Learning rate", "Gradient norm", "Quality", "GPU", "Other"];
  var state = {smooth: 0, log: false};
  var charts = [];
  var drawn = 0;
  var expected = 0;

  function el(tag, cls) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    for (var i = 2; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid === null || kid === undefined) continue;
      e.append(typeof kid === "string" || typeof kid === "number" ? String(kid) : kid);
    }
    return e;
  }

  function fmt(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number") {
      if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
      if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) return v.toPrecision(3);
      return String(Math.round(v * 1e4) / 1e4);
    }
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function runColor(r, j) {
    if (data.runs.length > 1) return PALETTE[r % PALETTE.length];
    return PALETTE[j % PALETTE.length];
  }

  /* ---- the top: runs, differences, incidents ---- */
  function header() {
    var h = el("header", "tw-head", el("h1", null, data.runs.length > 1 ? "trainwatch comparison" : "trainwatch report"));
    data.runs.forEach(function (run, r) {
      var doc = run.doc;
      var box = el("section", "tw-run");
      box.style.borderColor = runColor(r, 0);
      box.append(el("h2", null, el("span", "tw-badge tw-" + doc.status, doc.status.toUpperCase()), " ", run.label));
      var task = doc.task ? doc.task.name + " (" + doc.task.why + ")" : "";
      box.append(el("p", "tw-meta", "preset " + doc.preset + (task ? ", task " + task : "") +
        ", " + doc.counts.critical + " critical, " + doc.counts.warning + " warning, " + doc.counts.info + " info"));
      var t = el("table", "tw-sources", el("tr", null, el("th", null, "source"), el("th", null, "format"),
        el("th", null, "lines"), el("th", null, "last step")));
      doc.sources.forEach(function (s) {
        t.append(el("tr", null, el("td", null, s.path), el("td", null, s.format), el("td", null, s.lines),
          el("td", null, fmt(s.max_step))));
      });
      box.append(t);
      h.append(box);
    });
    return h;
  }

  function differences() {
    if (!data.diff || !data.diff.length) return null;
    var ul = el("ul", "tw-diff");
    data.diff.forEach(function (line) { ul.append(el("li", null, line)); });
    return el("section", "tw-diffs", el("h2", null, "Differences"), ul);
  }

  function detailOf(f) {
    var d = el("div", "tw-detail-body");
    d.append(el("p", "tw-message", f.message));
    if (f.incident && f.echo_of) d.append(el("p", "tw-note", "part of the incident " + f.echo_of));
    var ev = f.evidence || {};
    var keys = Object.keys(ev);
    if (keys.length) {
      var t = el("table", "tw-evidence");
      keys.forEach(function (k) { t.append(el("tr", null, el("th", null, k), el("td", null, fmt(ev[k])))); });
      d.append(el("h4", null, "Evidence"), t);
    }
    if (f.fixes && f.fixes.length) {
      var ol = el("ol", "tw-fixes");
      f.fixes.forEach(function (x) { ol.append(el("li", null, x)); });
      d.append(el("h4", null, "Fixes"), ol);
    }
    if (f.context && f.context.length) {
      var pre = el("pre", "tw-log");
      f.context.forEach(function (pair) {
        var row = el("span", pair[0] === f.line ? "tw-line tw-hit" : "tw-line",
          el("span", "tw-lineno", String(pair[0])), pair[1]);
        pre.append(row, "\n");
      });
      d.append(el("h4", null, "Log lines " + f.context[0][0] + "-" + f.context[f.context.length - 1][0] +
        " of " + f.source), pre);
    }
    return d;
  }

  function incidents() {
    var wrap = el("section", "tw-incidents" + (data.runs.length > 1 ? " tw-side" : ""));
    data.runs.forEach(function (run, r) {
      var col = el("div", "tw-col", el("h2", null, data.runs.length > 1 ? "Findings: " + run.label : "Findings"));
      if (!run.doc.findings.length) col.append(el("p", "tw-none", "No findings."));
      run.doc.findings.forEach(function (f, i) {
        var sum = el("summary", null, el("span", "tw-badge tw-" + f.severity, f.severity), " ",
          el("b", null, f.id), " ", f.step !== null && f.step !== undefined ? "step " + f.step : "no step",
          " - ", f.title);
        var det = el("details", "tw-finding" + (f.echo_of ? " tw-echo" : ""), sum, detailOf(f));
        det.id = "f-" + r + "-" + i;
        col.append(det);
      });
      wrap.append(col);
    });
    return wrap;
  }

  function openFinding(r, i) {
    var det = document.getElementById("f-" + r + "-" + i);
    if (!det) return;
    det.open = true;
    det.classList.add("tw-flash");
    det.scrollIntoView({block: "nearest"});
    setTimeout(function () { det.classList.remove("tw-flash"); }, 1200);
  }

  /* ---- curves ---- */
  function mergeTables(tables) {
    // k-way merge of [xs, ys] tables (each sorted by x, repeats allowed): one row per point; a table
    // with no point at a row gets undefined (spanned), a NaN from the log is null (a gap).
    var idx = tables.map(function () { return 0; });
    var xs = [], cols = tables.map(function () { return []; });
    for (;;) {
      var best = -1, bx = Infinity;
      for (var t = 0; t < tables.length; t++) {
        if (idx[t] < tables[t][0].length && tables[t][0][idx[t]] < bx) { bx = tables[t][0][idx[t]]; best = t; }
      }
      if (best < 0) break;
      xs.push(bx);
      for (var u = 0; u < tables.length; u++) cols[u].push(u === best ? tables[u][1][idx[u]] : undefined);
      idx[best]++;
    }
    return [xs].concat(cols);
  }

  function smoothed(ys, w) {
    if (!w) return ys;
    var out = new Array(ys.length), acc = null;
    for (var i = 0; i < ys.length; i++) {
      var v = ys[i];
      if (v === undefined) { out[i] = undefined; continue; }
      if (v === null) { acc = null; out[i] = null; continue; }
      acc = acc === null ? v : acc * w + v * (1 - w);
      out[i] = acc;
    }
    return out;
  }

  function forLog(ys) {
    return ys.map(function (v) { return v !== null && v !== undefined && v <= 0 ? undefined : v; });
  }

  function cssVar(name) { return getComputedStyle(document.body).getPropertyValue(name).trim(); }

  function groups() {
    var names = [];
    data.runs.forEach(function (run) {
      Object.keys(run.charts).forEach(function (g) { if (names.indexOf(g) < 0) names.push(g); });
    });
    names.sort(function (a, b) { return GROUP_ORDER.indexOf(a) - GROUP_ORDER.indexOf(b); });
    return names;
  }

  function markersFor(group, subjects) {
    // each finding with a step is marked once: on the chart that draws its subject, else the first chart
    var out = [];
    data.runs.forEach(function (run, r) {
      run.doc.findings.forEach(function (f, i) {
        if (f.at === null || f.at === undefined) return;
        var home = run.homes[i];
        if (home === group) out.push({r: r, i: i, x: f.at, f: f});
      });
    });
    var rank = {info: 0, warning: 1, critical: 2};
    out.sort(function (a, b) { return (rank[a.f.severity] || 0) - (rank[b.f.severity] || 0); });  // worst on top
    return out;
  }

  function tick(v) {
    if (v === null || v === undefined) return "";
    if (v !== 0 && (Math.abs(v) < 1e-2 || Math.abs(v) >= 1e5)) return v.toExponential(1);
    return String(parseFloat(v.toPrecision(4)));
  }

  function nanMarks(group) {
    // where a curve of this chart was NaN or Inf in the log: a tick at the foot of the chart
    var out = [];
    data.runs.forEach(function (run, r) {
      var names = (run.charts[group] || []).map(function (c) { return c.name; });
      (run.nonfinite || []).forEach(function (n) {
        if (names.indexOf(n.metric) < 0) return;
        n.x.forEach(function (x) { out.push({r: r, x: x, metric: n.metric}); });
      });
    });
    return out;
  }

  function placeMarkers(u, marks, holder, nans) {
    holder.textContent = "";
    var lo = u.scales.x.min, hi = u.scales.x.max;
    nans.forEach(function (n) {
      if (n.x < lo || n.x > hi) return;
      var t = el("span", "tw-nan");
      t.title = n.metric + " NaN/Inf at " + data.align + " " + n.x;
      t.style.left = u.valToPos(n.x, "x") + "px";
      holder.append(t);
    });
    marks.forEach(function (m) {
      var b = el("button", "tw-marker tw-" + m.f.severity);
      b.type = "button";
      b.title = (data.runs.length > 1 ? data.runs[m.r].label + ": " : "") + m.f.id + " at step " + m.f.step +
        " (" + m.f.severity + ")";
      b.setAttribute("aria-label", b.title);
      b.dataset.finding = m.r + "-" + m.i;
      // a finding past the last point (a crash after the last step) sits at the edge while the whole
      // run is shown; zoomed in, one outside the view is hidden
      var x = m.x;
      var whole = lo <= u.data[0][0] && hi >= u.data[0][u.data[0].length - 1];
      if (whole) x = Math.min(Math.max(x, lo), hi);
      if (x < lo || x > hi) b.hidden = true;
      b.style.left = u.valToPos(x, "x") + "px";
      b.addEventListener("click", function () { openFinding(m.r, m.i); });
      holder.append(b);
    });
  }

  function chart(host, group) {
    var tables = [], series = [{label: data.align}];
    data.runs.forEach(function (run, r) {
      (run.charts[group] || []).forEach(function (c, j) {
        var ys = smoothed(c.y, state.smooth);
        tables.push([c.x, state.log ? forLog(ys) : ys]);
        series.push({
          label: data.runs.length > 1 ? run.label + ": " + c.name : c.name,
          stroke: runColor(r, j),
          dash: data.runs.length > 1 ? DASHES[j % DASHES.length] : (c.rank !== null ? DASHES[1] : []),
          width: c.rank !== null ? 1 : 1.5,
          spanGaps: false,
          points: {show: c.y.filter(function (v) { return v !== null; }).length < 3},  // a lone point shows
        });
      });
    });
    var merged = mergeTables(tables);
    var marks = markersFor(group);
    var nans = nanMarks(group);
    var holder = el("div", "tw-markers");
    var axis = {stroke: cssVar("--fg"), grid: {stroke: cssVar("--grid")}, ticks: {stroke: cssVar("--grid")}};
    var yaxis = Object.assign({}, axis, {size: 64, values: function (u, splits) { return splits.map(tick); }});
    var opts = {
      width: Math.max(280, host.clientWidth || 800), height: 260,
      series: series,
      scales: {x: {time: false}, y: state.log ? {distr: 3} : {}},
      axes: [axis, yaxis],
      legend: {live: true},
      cursor: {drag: {x: true, y: false}},
      hooks: {
        draw: [function (u) {
          if (!holder.parentNode) u.over.append(holder);  // the first draw can come before "ready"
          placeMarkers(u, marks, holder, nans);
          if (!u._twDrawn) { u._twDrawn = true; drawn++; signal(); }
        }],
      },
    };
    return new uPlot(opts, merged, host);
  }

  function signal() {
    if (drawn < expected) return;
    var markers = document.querySelectorAll(".tw-marker").length;
    document.documentElement.setAttribute("data-tw-drawn", String(drawn));
    document.documentElement.setAttribute("data-tw-markers", String(markers));
    document.documentElement.setAttribute("data-tw-ms", performance.now().toFixed(0));
  }

  function drawAll(box) {
    charts.forEach(function (c) { c.destroy(); });
    charts = [];
    drawn = 0;
    box.textContent = "";
    var gs = groups();
    expected = gs.length;
    gs.forEach(function (g) {
      var host = el("div", "tw-plot");
      box.append(el("section", "tw-chart", el("h3", null, g), host));
      charts.push(chart(host, g));
    });
    if (!gs.length) { box.append(el("p", "tw-none", "No curves were read.")); signal(); }
  }

  function controls(box) {
    var smooth = el("input");
    smooth.type = "range"; smooth.min = "0"; smooth.max = "0.99"; smooth.step = "0.01"; smooth.value = "0";
    smooth.id = "tw-smooth";
    smooth.addEventListener("change", function () { state.smooth = parseFloat(smooth.value); drawAll(box); });
    var log = el("input");
    log.type = "checkbox"; log.id = "tw-log";
    log.addEventListener("change", function () { state.log = log.checked; drawAll(box); });
    var hint = "drag across a chart to zoom, double-click to zoom out";
    return el("div", "tw-controls", el("label", null, "smoothing ", smooth), " ",
      el("label", null, log, " log scale"), " ", el("span", "tw-hint", hint),
      data.align !== "step" ? el("span", "tw-hint", " x axis: " + data.align) : null);
  }

  root.append(header());
  var diff = differences();
  if (diff) root.append(diff);
  root.append(incidents());
  var box = el("div", "tw-charts");
  root.append(el("section", "tw-curves", el("h2", null, "Curves"), controls(box), box));
  drawAll(box);
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details.tw-finding").forEach(function (d) { d.open = true; });
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      charts.forEach(function (c) { c.setSize({width: Math.max(280, c.root.parentNode.clientWidth), height: 260}); });
    }, 150);
  });
})();
