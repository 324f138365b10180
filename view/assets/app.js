// parley view: the pages of runs and rollout outputs, hand-written, no
// dependencies. Pages fetch data only through parley.api(url): served, it
// fetches the URL; in an exported file it reads window.PARLEY_SNAPSHOT.
(function () {
  "use strict";

  var snapshot = window.PARLEY_SNAPSHOT || null;
  var exported = window.PARLEY_EXPORT || null;
  var main = document.getElementById("main");
  var tip = document.getElementById("tip");
  var poll = null;
  var homeSeen = false;

  function api(url) {
    if (snapshot) {
      if (!Object.prototype.hasOwnProperty.call(snapshot, url)) {
        return Promise.reject(new Error("Not in this export: " + url + ". Export again with these steps or filters (parley view --export FILE --steps A-B)."));
      }
      var v = snapshot[url];
      return v && v.error ? Promise.reject(new Error(v.error)) : Promise.resolve(v);
    }
    return fetch(url, { cache: "no-store" }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.error || r.statusText);
        return j;
      });
    });
  }

  // el builds an element: attrs may hold class, text, on<event> handlers,
  // dataset entries (data-*) and other attributes.
  function el(tag, attrs) {
    var svg = tag.indexOf("svg:") === 0;
    var e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4)) : document.createElement(tag);
    for (var k in attrs || {}) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k.indexOf("on") === 0) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k === "className" ? "class" : k, v);
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }

  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return String(x);
    return String(Math.abs(x) >= 1000 ? Math.round(x) : parseFloat(x.toPrecision(3)));
  }
  function short(s, n) { s = s || ""; return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function crumbs(items) {
    var n = document.getElementById("crumbs");
    n.textContent = "";
    items.forEach(function (it) { add(n, [" › ", it[1] ? el("a", { href: it[1] }, it[0]) : el("span", {}, it[0])]); });
  }
  function fail(err) {
    main.textContent = "";
    add(main, el("div", { className: "error" }, el("strong", {}, "Error: "), err.message || String(err)));
  }
  function showTip(ev, lines) {
    tip.textContent = "";
    lines.forEach(function (l) { add(tip, el("div", {}, l)); });
    tip.hidden = false;
    var x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var y = ev.clientY + 14 + tip.offsetHeight > window.innerHeight ? ev.clientY - tip.offsetHeight - 10 : ev.clientY + 14;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() { tip.hidden = true; }

  // ---- routes ----
  function route(hash) {
    if (hash !== undefined && location.hash !== hash) { location.hash = hash; return; }
    if (poll) { clearInterval(poll); poll = null; }
    hideTip();
    var h = location.hash.replace(/^#\/?/, "");
    var q = "";
    var qi = h.indexOf("?");
    if (qi >= 0) { q = h.slice(qi + 1); h = h.slice(0, qi); }
    var p = h.split("/").filter(Boolean).map(decodeURIComponent);
    main.textContent = "";
    add(main, el("p", { className: "muted" }, "Loading…"));
    var page;
    if (p.length === 0) page = home();
    else if (p[0] === "g" && p.length >= 2) page = gamePage(p[1], p.slice(2));
    else if (p[0] === "run" && p.length === 2) page = overview(+p[1]);
    else if (p[0] === "run" && p[2] === "step" && p.length === 4) page = groupsPage(+p[1], +p[3], new URLSearchParams(q));
    else if (p[0] === "run" && p[2] === "step" && p[4] === "group") page = groupPage(+p[1], +p[3], p[5]);
    else if (p[0] === "run" && p[2] === "step" && p[4] === "rollout") page = dialoguePage(+p[1], +p[3], p[5]);
    else page = Promise.reject(new Error("no page at #/" + h));
    Promise.resolve(page).catch(fail);
  }

  function gamePage(kind, args) {
    crumbs([[kind, null]]);
    if (!window.parleyGames) throw new Error("the game pages are not built into this parley");
    main.textContent = "";
    return window.parleyGames.render(kind, main, args);
  }

  function runName(info) { return info.name + (info.kind === "rollout" ? " (rollout output)" : ""); }

  // live re-reads url every 5 s while the page is shown (not in an export)
  // and calls redraw when the answer changed.
  function live(url, first, redraw) {
    if (snapshot) return;
    var last = JSON.stringify(first);
    poll = setInterval(function () {
      api(url).then(function (j) {
        var s = JSON.stringify(j);
        if (s !== last) { last = s; redraw(j); }
      }).catch(function () {});
    }, 5000);
  }

  function home() {
    crumbs([]);
    return api("/api/index").then(function (ix) {
      if (ix.runs.length === 1 && !ix.games.length && !homeSeen) {
        homeSeen = true; // once: going back home later shows the list
        return route("#/run/0");
      }
      homeSeen = true;
      main.textContent = "";
      add(main, el("h1", {}, "What parley wrote"));
      if (ix.runs.length) {
        add(main, el("table", { className: "list" },
          el("thead", {}, el("tr", {}, ["Run", "Kind", "Game", "Model", "Steps", "Last step", "Skipped files", "Folder"].map(function (h) { return el("th", {}, h); }))),
          el("tbody", {}, ix.runs.map(function (r) {
            return el("tr", {},
              el("td", {}, el("a", { href: "#/run/" + r.index, className: "run-link" }, r.name)),
              el("td", {}, r.kind === "rollout" ? "parley rollout output" : "training run"),
              el("td", {}, r.env || "–"), el("td", {}, r.model || "–"),
              el("td", { className: "num" }, r.steps), el("td", { className: "num" }, r.kind === "rollout" ? "–" : r.last_step),
              el("td", { className: "num" + (r.skipped ? " warn" : "") }, r.skipped),
              el("td", { className: "path" }, r.dir));
          }))));
      }
      if (ix.games.length) {
        add(main, el("h2", {}, "Tournaments, series, leagues, comparisons"));
        add(main, el("ul", { className: "games" }, ix.games.map(function (g) {
          return el("li", {}, el("a", { href: g.Route }, g.Title), " ", el("span", { className: "muted" }, g.Kind + " · " + g.Dir));
        })));
      }
      if (!ix.runs.length && !ix.games.length) add(main, el("p", {}, "Nothing found."));
    });
  }

  // ---- overview ----
  var palette = ["#1f6fb2", "#d9622b", "#2e9c5a", "#8a4fbf", "#b8860b", "#c2185b"];

  function overview(run) {
    var url = "/api/run/overview?run=" + run;
    return api(url).then(function (ov) {
      drawOverview(run, ov);
      live(url, ov, function (j) { drawOverview(run, j); });
    });
  }

  function drawOverview(run, ov) {
    crumbs([[runName(ov.run), null]]);
    main.textContent = "";
    var steps = {};
    ov.steps.forEach(function (s) { steps[s.step] = s; });
    var open = function (step) {
      if (!steps[step]) {
        var near = ov.steps.filter(function (s) { return s.step >= step; })[0];
        if (!near) return;
        step = near.step;
      }
      route("#/run/" + run + "/step/" + step);
    };
    add(main, el("h1", {}, runName(ov.run)));
    add(main, el("p", { className: "meta" },
      ov.run.env ? ["game ", el("b", {}, ov.run.env), " · "] : null,
      ov.run.model ? ["model ", el("b", {}, ov.run.model), " · "] : null,
      ov.run.judge ? ["judge ", el("b", {}, ov.run.judge), " · "] : null,
      ov.steps.length + " step" + (ov.steps.length === 1 ? "" : "s") + " with rollouts",
      snapshot ? (exported && (exported.from || exported.to) ? " · this export holds steps " + (exported.from || ov.steps.length && ov.steps[0].step) + "–" + (exported.to || ov.run.last_step) : null) : el("span", { className: "muted" }, " · re-read every 5 s")));
    skippedNote(ov.skipped);
    var here = el("p", { className: "meta" });
    add(main, here);
    api("/api/index").then(function (ix) {
      var mine = ix.games.filter(function (g) { return g.Dir === ov.run.dir || g.Dir.indexOf(ov.run.dir + "/") === 0; });
      if (mine.length) add(here, "Also in this run: ", mine.map(function (g, i) { return [i ? " · " : "", el("a", { href: g.Route }, g.Title)]; }));
    }).catch(function () {});
    add(main, el("h2", {}, "Steps"));
    var outside = function (step) { return exported && step > 0 && ((exported.from && step < exported.from) || (exported.to && step > exported.to)); };
    add(main, el("div", { className: "steps" }, ov.steps.length ? ov.steps.map(function (s) {
      var title = outside(s.step) ? "not in this export" : s.batch ? "rollouts and batch" : "rollouts only (no batch written yet)";
      return el("a", { href: "#/run/" + run + "/step/" + s.step, className: "step" + (s.batch ? "" : " nobatch") + (outside(s.step) ? " outside" : ""), title: title }, ov.run.kind === "rollout" ? "rollouts" : s.step);
    }) : el("span", { className: "muted" }, "No step has rollouts yet.")));
    if (ov.summary && Object.keys(ov.summary).length) {
      add(main, el("h2", {}, "Summary (summary.json)"));
      add(main, el("table", { className: "list summary" }, el("tbody", {}, Object.keys(ov.summary).sort().map(function (k) {
        return el("tr", {}, el("td", {}, k.replace(/_/g, " ")), el("td", { className: "num" }, fmt(ov.summary[k])));
      }))));
    }
    if (!ov.charts || !ov.charts.length) {
      if (ov.run.kind === "run") add(main, el("p", { className: "muted" }, "metrics.jsonl has no step lines yet."));
      return;
    }
    var groups = {};
    var order = [];
    ov.charts.forEach(function (c) {
      if (!groups[c.group]) { groups[c.group] = []; order.push(c.group); }
      groups[c.group].push(c);
    });
    order.forEach(function (g) {
      add(main, el("h2", {}, g));
      add(main, el("div", { className: "charts" }, groups[g].map(function (c) { return lineChart(c, open); })));
    });
  }

  function skippedNote(skipped) {
    if (!skipped || !skipped.length) return;
    add(main, el("div", { className: "warnbox" }, el("strong", {}, "Skipped, cannot be read:"),
      el("ul", {}, skipped.map(function (s) { return el("li", {}, el("code", {}, s.file), ": " + s.error); }))));
  }

  function niceTicks(lo, hi, n) {
    var span = hi - lo || 1;
    var step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = span / n / step;
    step *= err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }

  // lineChart draws a chart's series (and band) as SVG; hovering shows the
  // values at the nearest step, clicking opens that step's groups.
  function lineChart(c, open) {
    var W = 560, H = 230, L = 58, R = 14, T = 12, B = 38;
    var xs = [], ys = [];
    c.series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); }); });
    if (c.band) c.band.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1], p[2]); });
    var lo = function (a) { return a.reduce(function (m, v) { return v < m ? v : m; }, Infinity); };
    var hi = function (a) { return a.reduce(function (m, v) { return v > m ? v : m; }, -Infinity); };
    var x0 = lo(xs), x1 = hi(xs), y0 = lo(ys), y1 = hi(ys);
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { var d = Math.abs(y0) * 0.1 || 1; y0 -= d; y1 += d; }
    var pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    if (lo(ys) >= 0 && y0 < 0) y0 = 0; // rates, counts and times are never negative
    var sx = function (x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    var sy = function (y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
    var svg = el("svg:svg", { viewBox: "0 0 " + W + " " + H, className: "chart", role: "img", "aria-label": c.title, "data-chart": c.id });
    niceTicks(y0, y1, 4).forEach(function (v) {
      add(svg, el("svg:line", { x1: L, x2: W - R, y1: sy(v), y2: sy(v), className: "grid" }));
      add(svg, el("svg:text", { x: L - 6, y: sy(v) + 4, "text-anchor": "end", className: "tick" }, fmt(v)));
    });
    niceTicks(x0, x1, 6).filter(function (v) { return Number.isInteger(v); }).forEach(function (v) {
      add(svg, el("svg:text", { x: sx(v), y: H - B + 16, "text-anchor": "middle", className: "tick" }, v));
    });
    add(svg, el("svg:text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", className: "axis" }, "step"));
    add(svg, el("svg:line", { x1: L, x2: W - R, y1: H - B, y2: H - B, className: "axisline" }));
    if (c.band) {
      var up = c.band.points.map(function (p) { return sx(p[0]) + "," + sy(p[2]); });
      var down = c.band.points.slice().reverse().map(function (p) { return sx(p[0]) + "," + sy(p[1]); });
      add(svg, el("svg:polygon", { points: up.concat(down).join(" "), className: "band" }));
    }
    c.series.forEach(function (s, i) {
      var color = palette[i % palette.length];
      add(svg, el("svg:polyline", { points: s.points.map(function (p) { return sx(p[0]) + "," + sy(p[1]); }).join(" "), fill: "none", stroke: color, "stroke-width": 2 }));
      if (s.points.length <= 400) s.points.forEach(function (p) {
        add(svg, el("svg:circle", { cx: sx(p[0]), cy: sy(p[1]), r: 3, fill: color, "data-step": p[0], "data-key": s.key }));
      });
    });
    var guide = el("svg:line", { y1: T, y2: H - B, className: "guide", visibility: "hidden" });
    add(svg, guide);
    var steps = Array.from(new Set(xs)).sort(function (a, b) { return a - b; });
    var nearest = function (ev) {
      var r = svg.getBoundingClientRect();
      var x = x0 + ((ev.clientX - r.left) * W / r.width - L) / (W - L - R) * (x1 - x0);
      var a = 0, b = steps.length - 1; // binary search: the nearest step
      while (b - a > 1) { var m = (a + b) >> 1; if (steps[m] < x) a = m; else b = m; }
      return Math.abs(steps[a] - x) <= Math.abs(steps[b] - x) ? steps[a] : steps[b];
    };
    svg.addEventListener("mousemove", function (ev) {
      var st = nearest(ev);
      guide.setAttribute("x1", sx(st)); guide.setAttribute("x2", sx(st)); guide.setAttribute("visibility", "visible");
      var lines = [el("b", {}, "step " + st)];
      c.series.forEach(function (s) {
        var p = s.points.filter(function (q) { return q[0] === st; })[0];
        if (p) lines.push(s.label + ": " + fmt(p[1]));
      });
      if (c.band) {
        var b = c.band.points.filter(function (q) { return q[0] === st; })[0];
        if (b) lines.push(c.band.label + ": " + fmt(b[1]) + " – " + fmt(b[2]));
      }
      lines.push(el("span", { className: "muted" }, "click: open the step's groups"));
      showTip(ev, lines);
    });
    svg.addEventListener("mouseleave", function () { guide.setAttribute("visibility", "hidden"); hideTip(); });
    svg.addEventListener("click", function (ev) { hideTip(); open(nearest(ev)); });
    var legend = el("div", { className: "legend" }, c.series.map(function (s, i) {
      return el("span", {}, el("i", { style: "background:" + palette[i % palette.length] }), s.label);
    }), c.band ? el("span", {}, el("i", { className: "bandkey" }), c.band.label) : null);
    return el("figure", { className: "chartbox" }, el("figcaption", {}, c.title), legend, svg);
  }

  // ---- groups ----
  var filterFields = [
    ["prompt", "Prompt contains", "text"], ["category", "Category", "categories"], ["persona", "Persona pair", "persona_pairs"],
    ["member", "League member", "members"], ["reward_min", "Reward ≥", "number"], ["reward_max", "Reward ≤", "number"],
    ["adv_min", "Advantage ≥", "number"], ["adv_max", "Advantage ≤", "number"], ["agreed", "Agreement", "agreed"]];

  // groupsURL is the API URL of a groups page; the export builds the same.
  function groupsURL(run, step, params) {
    var u = "/api/run/groups?run=" + run + "&step=" + step;
    filterFields.forEach(function (f) {
      var v = (params.get(f[0]) || "").trim();
      if (v) u += "&" + f[0] + "=" + encodeURIComponent(v);
    });
    var page = +(params.get("page") || 0);
    if (page > 0) u += "&page=" + page;
    return u;
  }

  function groupsPage(run, step, params) {
    if (exported && exported.filter && !params.toString()) params = new URLSearchParams(exported.filter);
    return Promise.all([api("/api/run/overview?run=" + run), api(groupsURL(run, step, params))]).then(function (r) {
      var ov = r[0], g = r[1];
      var label = ov.run.kind === "rollout" ? "rollouts" : "step " + step;
      crumbs([[runName(ov.run), "#/run/" + run], [label, null]]);
      main.textContent = "";
      var idx = ov.steps.map(function (s) { return s.step; }).indexOf(step);
      var nav = el("span", { className: "stepnav" },
        idx > 0 ? el("a", { href: "#/run/" + run + "/step/" + ov.steps[idx - 1].step + (params.toString() ? "?" + params : "") }, "‹ step " + ov.steps[idx - 1].step) : null,
        idx >= 0 && idx < ov.steps.length - 1 ? el("a", { href: "#/run/" + run + "/step/" + ov.steps[idx + 1].step + (params.toString() ? "?" + params : "") }, "step " + ov.steps[idx + 1].step + " ›") : null);
      add(main, el("h1", {}, runName(ov.run) + " · " + label, nav));
      add(main, filterForm(run, step, params, g));
      add(main, el("p", { className: "meta" }, g.groups_matched + " of " + g.groups_total + " groups match (" + g.rollouts + " rollouts) · page " + (g.page + 1) + " of " + g.pages));
      if (!g.groups.length) { add(main, el("p", { className: "muted" }, "No group matches these filters.")); return; }
      add(main, el("table", { className: "list groups" },
        el("thead", {}, el("tr", {}, ["Group", "Category", "Task", "Personas", "Members (score · reward/advantage per role)"].map(function (h) { return el("th", {}, h); }))),
        el("tbody", {}, g.groups.map(function (gr) {
          return el("tr", { "data-group": gr.group_id },
            el("td", {}, el("a", { href: "#/run/" + run + "/step/" + step + "/group/" + encodeURIComponent(gr.group_id), className: "group-link" }, short(gr.group_id, 18)), el("div", { className: "muted small" }, "side by side")),
            el("td", {}, gr.category || "–"),
            el("td", { className: "task", title: gr.task }, short(gr.task, 180)),
            el("td", { className: "personas" }, personaLabel(gr)),
            el("td", {}, el("div", { className: "members" }, gr.members.map(function (m) {
              return el("a", { href: "#/run/" + run + "/step/" + step + "/rollout/" + encodeURIComponent(m.rollout_id), className: "member" + (m.match ? "" : " nomatch") + (m.failed ? " failed" : ""), "data-rollout": m.rollout_id },
                "#" + m.index + " ", m.agreed ? el("span", { className: "ok", title: "agreed" }, "✓ ") : null,
                m.failed ? "failed" : m.judged ? "score " + fmt(m.score) : "not judged",
                el("span", { className: "roles" }, m.roles.filter(function (o) { return o.scored; }).map(function (o) { return " " + o.role + " " + fmt(o.reward) + "/" + fmt(o.advantage); })));
            }))));
        }))));
      if (g.pages > 1) {
        add(main, el("div", { className: "pager" }, Array.from({ length: g.pages }, function (_, i) {
          var p = new URLSearchParams(params); p.set("page", i);
          return i === g.page ? el("b", {}, i + 1) : el("a", { href: "#/run/" + run + "/step/" + step + "?" + p }, i + 1);
        })));
      }
    });
  }

  function personaLabel(gr) {
    var names = (gr.personas || []).map(function (p) { return p.role + ": " + (p.name || short(p.text, 40)); });
    return [gr.persona_pair_id ? el("div", { className: "small" }, gr.persona_pair_id) : null, names.map(function (n) { return el("div", { className: "muted small" }, n); })];
  }

  function filterForm(run, step, params, g) {
    var inputs = {};
    var form = el("form", { className: "filters", onsubmit: function (ev) {
      ev.preventDefault();
      var p = new URLSearchParams();
      filterFields.forEach(function (f) { var v = inputs[f[0]].value.trim(); if (v) p.set(f[0], v); });
      route("#/run/" + run + "/step/" + step + (p.toString() ? "?" + p : ""));
    } });
    filterFields.forEach(function (f) {
      var v = params.get(f[0]) || "";
      var input;
      if (f[2] === "text" || f[2] === "number") {
        input = el("input", { type: f[2] === "number" ? "number" : "search", step: "any", name: f[0], value: v });
      } else {
        var opts = f[2] === "agreed" ? ["yes", "no"] : g[f[2]] || [];
        if (f[2] !== "agreed" && !opts.length && !v) return;
        input = el("select", { name: f[0] }, el("option", { value: "" }, "any"), opts.map(function (o) { return el("option", { value: o, selected: o === v ? "selected" : null }, f[2] === "agreed" ? (o === "yes" ? "agreed" : "did not agree") : o); }));
        if (v && opts.indexOf(v) < 0) add(input, el("option", { value: v, selected: "selected" }, v));
      }
      inputs[f[0]] = input;
      add(form, el("label", {}, el("span", {}, f[1]), input));
    });
    filterFields.forEach(function (f) { if (!inputs[f[0]]) inputs[f[0]] = { value: "" }; });
    add(form, el("button", { type: "submit" }, "Filter"), el("a", { href: "#/run/" + run + "/step/" + step, className: "clear" }, "clear"));
    return form;
  }

  // ---- a group, side by side ----
  function groupPage(run, step, group) {
    return Promise.all([api("/api/run/overview?run=" + run), api("/api/run/group?run=" + run + "&step=" + step + "&group=" + encodeURIComponent(group))]).then(function (r) {
      var ov = r[0], g = r[1];
      var label = ov.run.kind === "rollout" ? "rollouts" : "step " + step;
      crumbs([[runName(ov.run), "#/run/" + run], [label, "#/run/" + run + "/step/" + step], ["group " + short(group, 16), null]]);
      main.textContent = "";
      var first = g.members[0];
      add(main, el("h1", {}, "Group " + group));
      add(main, taskBox(first));
      add(main, el("div", { className: "columns", style: "grid-template-columns: repeat(" + g.members.length + ", minmax(260px, 1fr))" }, g.members.map(function (d) {
        return el("section", { className: "column", "data-rollout": d.rollout_id },
          el("h3", {}, el("a", { href: "#/run/" + run + "/step/" + step + "/rollout/" + encodeURIComponent(d.rollout_id) }, "#" + d.index + " · tokens ›")),
          outcome(d), rolesTable(d.roles), turns(d), finalBox(d));
      })));
    });
  }

  function taskBox(d) {
    return el("div", { className: "task-box" },
      el("div", { className: "meta" }, d.category ? ["category ", el("b", {}, d.category), " · "] : null, "prompt ", el("b", {}, d.prompt_id), d.persona_pair_id ? [" · persona pair ", el("b", {}, d.persona_pair_id)] : null),
      el("p", { className: "task" }, d.task),
      d.personas.length ? el("dl", { className: "personas" }, d.personas.map(function (p) { return [el("dt", {}, p.role + (p.name ? " · " + p.name : "")), el("dd", {}, p.text)]; })) : null);
  }

  function outcome(d) {
    return el("div", { className: "outcome" },
      d.failed ? el("span", { className: "bad" }, "failed: " + d.error) : null,
      el("span", { className: d.agreed ? "ok" : "muted" }, d.agreed ? "agreed" : "no agreement"),
      " · " + d.rounds + " round" + (d.rounds === 1 ? "" : "s"),
      d.judged ? [" · judge score ", el("b", {}, fmt(d.score))] : d.judge_error ? [" · ", el("span", { className: "bad" }, "judge failed: " + d.judge_error)] : " · not judged");
  }

  function rolesTable(roles) {
    return el("table", { className: "roles-table" },
      el("thead", {}, el("tr", {}, ["Role", "Played by", "Score", "Reward", "Advantage"].map(function (h) { return el("th", {}, h); }))),
      el("tbody", {}, roles.map(function (o) {
        var who = o.member ? "league " + o.member + (o.member_version ? " (v" + o.member_version + ")" : "") : o.policy === "trained" ? "the trained policy" : o.policy + (o.trained ? " (trained)" : "");
        return el("tr", {}, el("td", {}, o.role), el("td", {}, who),
          el("td", { className: "num" }, o.scored ? fmt(o.score) : "–"), el("td", { className: "num" }, o.scored ? fmt(o.reward) : "–"),
          el("td", { className: "num adv " + (o.advantage > 0 ? "pos" : o.advantage < 0 ? "neg" : "") }, o.scored ? fmt(o.advantage) : "–"));
      })));
  }

  function turns(d) {
    return el("ol", { className: "turns" }, d.turns.map(function (t) {
      return el("li", { className: "turn agent-" + t.agent.replace(/[^A-Za-z0-9_-]/g, "") },
        el("div", { className: "who" }, el("b", {}, t.agent), t.persona ? el("span", { className: "persona", title: t.persona }, short(t.persona, 60)) : null,
          el("span", { className: "ver", title: "the weight version that sampled this turn" }, "weights v" + t.weight_version),
          t.agree ? el("span", { className: "ok" }, "agrees") : null,
          t.finish_reason && t.finish_reason !== "stop" ? el("span", { className: "warn" }, t.finish_reason) : null),
        el("div", { className: "text" }, t.text));
    }));
  }

  function finalBox(d) {
    return el("div", {},
      d.final ? el("div", { className: "final" }, el("h4", {}, "Final completion"), el("div", { className: "text" }, d.final)) : null,
      d.judge_rationale || d.judge_model ? el("div", { className: "judge" }, el("h4", {}, "Judge" + (d.judge_model ? " · " + d.judge_model : "") + (d.judged ? " · score " + fmt(d.score) : "")),
        el("div", { className: "text" }, d.judge_rationale || "(no rationale)")) : null,
      d.outcome ? el("div", { className: "judge" }, el("h4", {}, "Game outcome"), el("code", { className: "text" }, d.outcome)) : null);
  }

  // auditBox is the audit judge's verdict on an audited rollout
  // (judge.audit), beside the training judge's score.
  function auditBox(a) {
    if (!a) return null;
    var head = "Audit judge" + (a.judge ? " · " + a.judge : "");
    if (a.audit_score === undefined || a.audit_score === null) {
      return el("div", { className: "judge audit" }, el("h4", {}, head + " · failed"),
        el("div", { className: "text bad" }, (a.cause || "failure") + (a.error ? ": " + a.error : "")));
    }
    return el("div", { className: "judge audit" },
      el("h4", {}, head + " · score " + fmt(a.audit_score) + " (training judge " + fmt(a.train_score) + ")"),
      el("div", { className: "text" }, a.rationale || "(no rationale)"));
  }

  // ---- one dialogue with its tokens ----
  function dialoguePage(run, step, rollout) {
    return Promise.all([api("/api/run/overview?run=" + run), api("/api/run/dialogue?run=" + run + "&step=" + step + "&rollout=" + encodeURIComponent(rollout))]).then(function (r) {
      var ov = r[0], x = r[1], d = x.dialogue;
      var label = ov.run.kind === "rollout" ? "rollouts" : "step " + step;
      crumbs([[runName(ov.run), "#/run/" + run], [label, "#/run/" + run + "/step/" + step], ["group " + short(d.group_id, 16), "#/run/" + run + "/step/" + step + "/group/" + encodeURIComponent(d.group_id)], ["#" + d.index, null]]);
      main.textContent = "";
      add(main, el("h1", {}, "Rollout " + d.rollout_id));
      add(main, taskBox(d));
      add(main, el("div", { className: "two" },
        el("div", {}, el("h2", {}, "Dialogue"), outcome(d), turns(d)),
        el("div", {}, el("h2", {}, "Rewards"), rolesTable(d.roles), finalBox(d), auditBox(x.audit))));
      add(main, el("h2", {}, "Tokens"));
      add(main, el("p", { className: "legend-tokens" }, el("span", { className: "tok m1" }, "trained (loss mask 1)"), " ", el("span", { className: "tok m0" }, "masked (loss mask 0: prompts, the other side's turns)"), " · hover a token for its id and logprob"));
      if (x.note) add(main, el("p", { className: "note" }, x.note));
      if (!x.tokenizer) add(main, el("p", { className: "note", id: "no-tokenizer" }, "No tokenizer found (tokenizer.json beside the model named in the run's config.yaml): token ids are shown instead of text."));
      else add(main, el("p", { className: "muted small" }, "decoded with " + x.tokenizer));
      x.sequences.forEach(function (s, i) { add(main, sequence(s, i)); });
      if (!x.sequences.length) add(main, el("p", { className: "muted" }, "This rollout has no token sequences (an external or scripted player)."));
    });
  }

  function sequence(s, i) {
    var trained = s.mask.reduce(function (a, b) { return a + (b ? 1 : 0); }, 0);
    var box = el("div", { className: "tokens", "data-seq": i, "data-role": s.role, "data-kind": s.kind });
    var frag = document.createDocumentFragment();
    for (var j = 0; j < s.ids.length; j++) {
      frag.appendChild(el("span", { className: "tok m" + (s.mask[j] ? 1 : 0), "data-i": j }, s.text ? s.text[j] : s.ids[j] + " "));
    }
    box.appendChild(frag);
    box.addEventListener("mousemove", function (ev) {
      var t = ev.target;
      if (!t.dataset || t.dataset.i === undefined) { hideTip(); return; }
      var j = +t.dataset.i;
      showTip(ev, [el("b", {}, "token " + j + " · id " + s.ids[j]), s.mask[j] ? "trained · logprob " + fmt(s.logprobs[j]) : "masked (not trained)",
        s.versions && s.versions.length ? "weights v" + s.versions[j] : null].filter(Boolean));
    });
    box.addEventListener("mouseleave", hideTip);
    return el("section", { className: "seq" },
      el("h3", {}, "Role " + s.role + " · " + s.kind + " · " + s.ids.length + " tokens, " + trained + " trained · from the " + (s.source === "batch" ? "step's batch" : "rollout record"),
        s.advantage !== undefined ? el("span", { className: "muted" }, " · reward " + fmt(s.reward) + ", advantage " + fmt(s.advantage)) : null),
      box);
  }

  window.parley = { api: api, el: el, route: route };
  document.getElementById("mode").textContent = snapshot ? "exported snapshot (offline)" : "live";
  window.addEventListener("hashchange", function () { route(); });
  document.addEventListener("DOMContentLoaded", function () { route(); });
})();
